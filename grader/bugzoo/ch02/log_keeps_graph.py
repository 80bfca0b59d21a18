"""The repair returns the connected output but logs it as is: every logged tensor keeps
its step's graph alive."""

EXPECT = r"requires grad|detached copy"
SELECT = "two_stage or feature_log or first_stage"


def first_stage(w1, x, log):
    features = w1 * x
    log.append(features)
    return features
