"""sgd_step clears each .grad after using it: the update is right, but the report that
reads the gradients after the step finds none."""

EXPECT = r"changed params|\.grad"
SELECT = "sgd_step"


def sgd_step(params, lr):
    with torch.no_grad():
        for p in params.values():
            if p.grad is not None:
                p -= lr * p.grad
                p.grad = None
