"""sgd_step builds new tensors and rebinds the dict entries instead of updating in place;
the new tensors are not leaves and the old ones keep receiving the gradients."""

EXPECT = r"in place"


def sgd_step(params, lr):
    for name, p in list(params.items()):
        if p.grad is not None:
            params[name] = p - lr * p.grad
