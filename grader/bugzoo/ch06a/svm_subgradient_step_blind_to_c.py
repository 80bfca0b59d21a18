"""Textbook subgradient descent with the classic lr / sqrt(k) step: the step shrinks, but it
is scaled by the learning rate alone, not by the size of the subgradient. With C = 1 and data
near the origin it settles; with a large C (the hinge term's subgradient C * sum y x is tens
of times the size of w) and data off the origin (w and b pulling against each other) it
overshoots and ends far above the minimum."""

EXPECT = r"size of the subgradient"
SELECT = "svm"
TASK = "ch06a.4"


def train_linear_svm(X, y, C=1.0, steps=600, lr=0.05):
    X, y = X.to(torch.float64), y.to(torch.float64)
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    b = torch.zeros((), dtype=torch.float64)
    for k in range(1, steps + 1):
        pull = C * (y * (X @ w + b) < 1).to(X.dtype) * y  # examples inside the margin
        step = lr / k**0.5
        w = w - step * (w - pull @ X)
        b = b + step * pull.sum()
    return w.to(torch.float32), float(b)
