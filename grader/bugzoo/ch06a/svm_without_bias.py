"""The plane is forced through the origin (b stays 0): fine in high dimension, wrong
as soon as the classes are separated away from the origin."""

EXPECT = r"bias|offset"
SELECT = "svm"


def train_linear_svm(X, y, C=1.0, steps=600, lr=0.05):
    X, y = X.to(torch.float64), y.to(torch.float64)
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    for k in range(1, steps + 1):
        inside = (y * (X @ w) < 1).to(X.dtype)
        g = w - (C * inside * y) @ X
        m.mul_(0.9).add_(g, alpha=0.1)
        v.mul_(0.999).addcmul_(g, g, value=0.001)
        w -= lr * (1 - (k - 1) / steps) * (m / (1 - 0.9**k)) / ((v / (1 - 0.999**k)).sqrt() + 1e-8)
    return w.to(torch.float32), 0.0
