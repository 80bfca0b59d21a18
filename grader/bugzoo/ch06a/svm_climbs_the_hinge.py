"""The hinge's subgradient is added with the wrong sign, so examples inside the margin
push the plane away from classifying them."""

EXPECT = r"sign"
SELECT = "svm"


def train_linear_svm(X, y, C=1.0, steps=600, lr=0.05):
    X, y = X.to(torch.float64), y.to(torch.float64)
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    b = torch.zeros((), dtype=torch.float64)
    for k in range(1, steps + 1):
        pull = C * (y * (X @ w + b) < 1).to(X.dtype) * y
        step = 0.01 * (1 - (k - 1) / steps)
        w -= step * (w + pull @ X)
        b -= step * pull.sum()
    return w.to(torch.float32), float(b)
