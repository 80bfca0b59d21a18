"""The hinge losses are averaged instead of summed, so C acts N times weaker than the
objective says."""

EXPECT = r"sum, not mean"
SELECT = "svm"

_train_sum = train_linear_svm


def train_linear_svm(X, y, C=1.0, steps=600, lr=0.05):
    return _train_sum(X, y, C / X.shape[0], steps, lr)
