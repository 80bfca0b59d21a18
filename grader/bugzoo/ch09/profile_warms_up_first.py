"""fn is called once to warm up before the profiled run: the function runs twice, and
whatever it does (a training step, a counter) happens twice."""

EXPECT = r"once"
SELECT = "profile"

_reference_profile_top_ops = profile_top_ops


def profile_top_ops(fn, n):
    fn()
    return _reference_profile_top_ops(fn, n)
