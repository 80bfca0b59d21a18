"""accumulated_grad sums torch.autograd.grad of each weighted micro-batch loss in its own
dictionary, then writes the total into each parameter's .grad: no backward() into .grad
while accumulating, so stale gradients never need zeroing first."""


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    n = len(inputs)
    params = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    total = {name: torch.zeros_like(p) for name, p in params}
    for x_part, y_part in zip(
        torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    ):
        if not len(x_part):
            continue
        loss = loss_fn(model(x_part), y_part) * (len(x_part) / n)
        grads = torch.autograd.grad(loss, [p for _, p in params], allow_unused=True)
        for (name, _), g in zip(params, grads):
            if g is not None:
                total[name] += g
    for name, p in params:
        p.grad = total[name].clone()
    return {name: g.clone() for name, g in total.items()}
