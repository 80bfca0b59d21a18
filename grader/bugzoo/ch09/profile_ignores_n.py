"""Every operator is returned; n is ignored."""

EXPECT = r"n limits|n=1|n only"
SELECT = "profile"

_reference_profile_top_ops = profile_top_ops


def profile_top_ops(fn, n):
    return _reference_profile_top_ops(fn, 10_000)
