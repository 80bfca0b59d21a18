"""foreign counts every entry of the param groups, so a stray tensor listed twice counts
twice instead of once."""

EXPECT = r"distinct"
SELECT = "coverage or frozen_held"


def optimizer_coverage(model: nn.Module, optimizer: torch.optim.Optimizer) -> Coverage:
    """Compare the model's parameters that require grad with the optimizer's param groups,
    by object identity (an equal-valued copy is a different tensor). Returns a Coverage."""
    owned = {id(p) for group in optimizer.param_groups for p in group["params"]}
    mine = {id(p) for p in model.parameters()}
    missing = [
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in owned
    ]
    return Coverage(
        missing, sum(id(p) not in mine for g in optimizer.param_groups for p in g["params"])
    )
