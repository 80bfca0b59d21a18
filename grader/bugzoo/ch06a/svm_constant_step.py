"""Plain subgradient descent with a constant step: near the optimum every step jumps
across the hinge's kink, so w keeps hopping around the widest-margin plane."""

EXPECT = r"shrinks toward 0|constant step"
SELECT = "svm"


def train_linear_svm(X, y, C=1.0, steps=600, lr=0.05):
    X, y = X.to(torch.float64), y.to(torch.float64)
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    b = 0.0
    for _ in range(steps):
        pull = C * (y * (X @ w + b) < 1).to(X.dtype) * y
        w = w - lr * (w - pull @ X)
        b = b + lr * float(pull.sum())
    return w.to(torch.float32), b
