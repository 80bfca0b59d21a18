"""Folds the bias into w as a constant feature, so 0.5*||w||^2 also shrinks b: a plane
far from the origin is pulled toward it and the objective is no longer the SVM's."""

EXPECT = r"bias|offset|optimum|lower bound|no \(w, b\)"
SELECT = "svm"


def train_linear_svm(X, y, C=1.0, steps=600, lr=0.05):
    X1 = torch.cat([X.to(torch.float64), torch.ones(X.shape[0], 1, dtype=torch.float64)], 1)
    y = y.to(torch.float64)
    w = torch.zeros(X1.shape[1], dtype=torch.float64)
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    for k in range(1, steps + 1):
        inside = (y * (X1 @ w) < 1).to(X1.dtype)
        g = w - (C * inside * y) @ X1
        m.mul_(0.9).add_(g, alpha=0.1)
        v.mul_(0.999).addcmul_(g, g, value=0.001)
        w -= lr * (1 - (k - 1) / steps) * (m / (1 - 0.9**k)) / ((v / (1 - 0.999**k)).sqrt() + 1e-8)
    return w[:-1].to(torch.float32), float(w[-1])
