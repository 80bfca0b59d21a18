"""optimizer_coverage matches tensors by value (torch.equal) instead of identity, so an
optimizer over equal-valued copies looks complete."""

EXPECT = r"identity"
SELECT = "coverage"


def optimizer_coverage(model, optimizer):
    held = [p for group in optimizer.param_groups for p in group["params"]]

    def same(a, b):
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)

    missing = [
        n
        for n, p in model.named_parameters()
        if p.requires_grad and not any(same(p, q) for q in held)
    ]
    foreign = sum(not any(same(q, p) for p in model.parameters()) for q in held)
    return Coverage(missing, foreign)
