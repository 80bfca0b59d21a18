"""Micro-batch k is inputs[k::n_micro]: the sizes are tensor_split's and the gradient of a
plain model is the same, but the pieces are not the consecutive runs asked for."""

EXPECT = r"consecutive rows"
SELECT = "accumulated"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    n = len(inputs)
    model.zero_grad(set_to_none=True)
    for k in range(n_micro):
        x_part, y_part = inputs[k::n_micro], targets[k::n_micro]
        if len(x_part):
            (loss_fn(model(x_part), y_part) * (len(x_part) / n)).backward()
    return {
        name: (p.grad.clone() if p.grad is not None else torch.zeros_like(p))
        for name, p in model.named_parameters()
        if p.requires_grad
    }
