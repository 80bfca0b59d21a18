"""The loop never calls zero_grad: every step follows the sum of all earlier gradients."""

EXPECT = r"zero_grad before every backward"
SELECT = "overfit or memorizes"


def overfit_one_batch(model, batch, steps):
    x, y = batch
    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = loss_fn(model(x), y)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    return losses
