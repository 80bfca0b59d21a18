"""zero_grad inside the micro-batch loop: only the last micro-batch's gradient survives."""

EXPECT = r"lost between micro-batches|full-batch gradient"
SELECT = "accumulated"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    n = len(inputs)
    for x_part, y_part in zip(
        torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    ):
        model.zero_grad(set_to_none=True)
        (loss_fn(model(x_part), y_part) * (len(x_part) / n)).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}
