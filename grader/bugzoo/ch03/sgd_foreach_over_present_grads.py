"""sgd_step gathers the tensors whose .grad is not None and updates them in one foreach call,
so a dict with nothing to update (no tensor, or none with a .grad) hands the foreach op an
empty list, which it refuses (held-out round 14's class: sgd_step's domain)."""

EXPECT = r"nothing to update|empty"
SELECT = "sgd_step"
TASK = "ch03.5"


def sgd_step(params, lr):
    present = [p for p in params.values() if p.grad is not None]
    with torch.no_grad():
        torch._foreach_add_(present, [p.grad for p in present], alpha=-lr)
