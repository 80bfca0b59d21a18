"""sgd_step keeps autograd out of the update by switching each tensor's requires_grad off and
back on instead of using torch.no_grad(), which PyTorch refuses for a non-leaf in the dict
(held-out round 14's class: sgd_step's domain, non-leaves included)."""

EXPECT = r"non-leaf"
SELECT = "sgd_step"
TASK = "ch03.5"


def sgd_step(params, lr):
    for p in params.values():
        was = p.requires_grad
        p.requires_grad_(False)
        if p.grad is not None:
            p -= lr * p.grad
        p.requires_grad_(was)
