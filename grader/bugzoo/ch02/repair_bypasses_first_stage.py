"""The 'repair' gives the training loop a connected stage of its own and leaves
first_stage as it was: the run learns, but first_stage still returns a detached output."""

EXPECT = r"first_stage"
SELECT = "two_stage or table or feature_log or first_stage"


def first_stage(w1, x, log):
    features = (w1 * x).detach()
    log.append(features)
    return features


def _connected_stage(w1, x, log):
    features = w1 * x
    log.append(features.detach())
    return features


def two_stage_train(steps, lr):
    return run_two_stage(_connected_stage, steps, lr)
