"""The first stage returns ``.data`` instead of detaching: the same cut by another name."""

EXPECT = r"gradient (path|of the loss must reach)|w1"
SELECT = "two_stage or table or feature_log or first_stage"


def first_stage(w1, x, log):
    features = (w1 * x).data
    log.append(features)
    return features
