"""``split(n_micro)`` cuts the batch into pieces of n_micro examples (not n_micro pieces),
and each piece is still weighted 1/n_micro."""

EXPECT = r"share of the batch"
SELECT = "accumulated"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    model.zero_grad(set_to_none=True)
    for x_part, y_part in zip(inputs.split(n_micro), targets.split(n_micro)):
        (loss_fn(model(x_part), y_part) / n_micro).backward()
    return {n: p.grad.clone() for n, p in model.named_parameters()}
