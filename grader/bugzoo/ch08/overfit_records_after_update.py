"""Each loss is measured after the step's update, so row k does not describe prediction k."""

EXPECT = r"before"
SELECT = "overfit or memorizes"


def overfit_one_batch(model, batch, steps):
    x, y = batch
    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        with torch.no_grad():
            losses.append(loss_fn(model(x), y).item())
    return losses
