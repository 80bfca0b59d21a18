"""overfit_one_batch clears the gradients after each step instead of before it: the first
step also follows whatever the caller left in .grad."""

EXPECT = r"whatever the caller left in \.grad"
SELECT = "gradients_left"


def overfit_one_batch(model: nn.Module, batch: tuple[Tensor, Tensor], steps: int) -> list[float]:
    x, y = batch
    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = loss_fn(model(x), y)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return losses
