"""Plain SGD with a small step: after 200 steps the batch is still far from memorized, so
a healthy model looks broken."""

EXPECT = r"memoriz|near 0"
SELECT = "overfit or memorizes"


def overfit_one_batch(model, batch, steps):
    x, y = batch
    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    return train_steps(model, optimizer, loss_fn, (x, y), steps)
