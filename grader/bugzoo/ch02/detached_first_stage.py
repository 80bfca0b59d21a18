"""The book's bug: the first stage detaches its output to keep the log safe, so no
gradient path leads back to w1 and w2 learns alone."""

EXPECT = r"detach"
SELECT = "two_stage or table or feature_log or first_stage"


def first_stage(w1, x, log):
    features = (w1 * x).detach()
    log.append(features)
    return features
