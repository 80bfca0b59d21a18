"""Every micro-batch is weighted 1/n_micro: right for equal chunks, wrong when the batch
does not divide evenly."""

EXPECT = r"share of the batch|unequal"
SELECT = "accumulated"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    model.zero_grad(set_to_none=True)
    for x_part, y_part in zip(
        torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    ):
        (loss_fn(model(x_part), y_part) / n_micro).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}
