"""The accumulation starts from whatever .grad already held."""

EXPECT = r"stale|zero"
SELECT = "accumulated"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    n = len(inputs)
    for x_part, y_part in zip(
        torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    ):
        (loss_fn(model(x_part), y_part) * (len(x_part) / n)).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}
