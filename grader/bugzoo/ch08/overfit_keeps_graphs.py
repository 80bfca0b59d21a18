"""Each step's loss tensor is recorded as is: the list holds every step's graph alive
(and is not a list of numbers)."""

EXPECT = r"graph|another type than its contract declares"
SELECT = "overfit or memorizes"


def overfit_one_batch(model, batch, steps):
    x, y = batch
    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        losses.append(loss)
        loss.backward()
        optimizer.step()
    return losses
