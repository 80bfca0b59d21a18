"""check_targets only asks whether y differs from x, so any other offset passes as a
next-token batch."""

EXPECT = r"shift"
SELECT = "check_targets"


def check_targets(x, y):
    if torch.equal(x, y):
        return TargetCheck(False, 0, "y == x")
    return TargetCheck(True, 1, "y differs from x")
