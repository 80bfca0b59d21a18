"""optimizer_coverage compares data_ptr(): a detached view shares the parameter's memory,
so an optimizer over views looks complete although no gradient ever reaches them."""

EXPECT = r"identity"
SELECT = "coverage or sharing"


def optimizer_coverage(model: nn.Module, optimizer: torch.optim.Optimizer) -> Coverage:
    """Compare the model's parameters that require grad with the optimizer's param groups,
    by object identity (an equal-valued copy is a different tensor). Returns a Coverage."""
    owned = {p.data_ptr() for group in optimizer.param_groups for p in group["params"]}
    mine = {p.data_ptr() for p in model.parameters()}
    missing = [
        name
        for name, p in model.named_parameters()
        if p.requires_grad and p.data_ptr() not in owned
    ]
    return Coverage(missing, len(owned - mine))
