"""Each micro-batch's mean loss is backpropagated unscaled: the sum is n_micro times the
full-batch gradient."""

EXPECT = r"scal|share"
SELECT = "accumulated"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    model.zero_grad(set_to_none=True)
    for x_part, y_part in zip(
        torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    ):
        loss_fn(model(x_part), y_part).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}
