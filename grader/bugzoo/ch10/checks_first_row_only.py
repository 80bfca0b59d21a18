"""check_targets looks at the first row of the batch only."""

EXPECT = r"every row"
SELECT = "check_targets"

_full_check = check_targets


def check_targets(x, y):
    return _full_check(x[:1], y[:1])
