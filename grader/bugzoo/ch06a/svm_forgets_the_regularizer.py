"""Only the hinge losses are minimized: any separating plane with margins >= 1 is
'optimal', so the widest margin is never sought."""

EXPECT = r"0\.5\*\|\|w\|\|\^2"
SELECT = "svm"


def train_linear_svm(X, y, C=1.0, steps=600, lr=0.05):
    X, y = X.to(torch.float64), y.to(torch.float64)
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    b = torch.zeros((), dtype=torch.float64)
    m = [torch.zeros_like(w), torch.zeros_like(b)]
    v = [torch.zeros_like(w), torch.zeros_like(b)]
    for k in range(1, steps + 1):
        pull = C * (y * (X @ w + b) < 1).to(X.dtype) * y
        for p, g, mp, vp in zip((w, b), (-(pull @ X), -pull.sum()), m, v):
            mp.mul_(0.9).add_(g, alpha=0.1)
            vp.mul_(0.999).addcmul_(g, g, value=0.001)
            p -= (
                lr
                * (1 - (k - 1) / steps)
                * (mp / (1 - 0.9**k))
                / ((vp / (1 - 0.999**k)).sqrt() + 1e-8)
            )
    return w.to(torch.float32), float(b)
