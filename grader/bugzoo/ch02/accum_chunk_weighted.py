"""Splits with torch.chunk and weights each piece by its share of the batch: the gradient
is right, but chunk cuts pieces of ceil(n / n_micro), so 10 examples in 4 become 3, 3, 3, 1
and 5 in 4 become only three pieces."""

EXPECT = r"torch\.chunk"
SELECT = "accumulated"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    n = len(inputs)
    model.zero_grad(set_to_none=True)
    for x_part, y_part in zip(inputs.chunk(n_micro), targets.chunk(n_micro)):
        (loss_fn(model(x_part), y_part) * (len(x_part) / n)).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}
