"""sgd_step switches grad mode off for the update and on again afterwards, instead of
putting back the mode it found: a caller inside torch.no_grad() gets grad mode turned on."""

EXPECT = r"grad mode"
SELECT = "sgd_step"


def sgd_step(params, lr):
    torch.set_grad_enabled(False)
    for p in params.values():
        if p.grad is not None:
            p -= lr * p.grad
    torch.set_grad_enabled(True)
