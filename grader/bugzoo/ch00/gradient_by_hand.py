"""The derivative is written out by hand instead of being obtained from autograd: the
number is right, the lesson is skipped."""

EXPECT = r"autograd"
SELECT = "gradient"


def gradient_at(w, x, target):
    return float(2 * x * (x * w - target))
