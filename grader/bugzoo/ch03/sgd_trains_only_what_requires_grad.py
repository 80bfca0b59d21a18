"""sgd_step gathers the tensors that still require grad and updates them in one foreach call,
so a tensor frozen after its backward keeps its old value although its .grad is not None."""

EXPECT = r"requires_grad|frozen"
SELECT = "sgd_step"
TASK = "ch03.5"


def sgd_step(params, lr):
    trained = [p for p in params.values() if p.requires_grad and p.grad is not None]
    if trained:
        with torch.no_grad():
            torch._foreach_add_(trained, [p.grad for p in trained], alpha=-lr)
