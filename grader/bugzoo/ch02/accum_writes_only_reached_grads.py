"""Gradients are taken with ``torch.autograd.grad(..., allow_unused=True)`` and summed
into zeros, so every parameter gets its entry, but ``.grad`` is written only for the
parameters some micro-batch reached: one the loss never reaches keeps the gradient an
earlier backward left in its ``.grad``."""

EXPECT = r"still holds"
SELECT = "accumulated_grad"
TASK = "ch02.4"


def accumulated_grad(model, loss_fn, batch, n_micro):
    inputs, targets = batch
    n = len(inputs)
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    total = {name: torch.zeros_like(p) for name, p in named}
    reached = set()
    for x_part, y_part in zip(
        torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    ):
        if len(x_part) == 0:
            continue
        loss = loss_fn(model(x_part), y_part) * (len(x_part) / n)
        grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
        for (name, _), g in zip(named, grads):
            if g is not None:
                total[name] += g
                reached.add(name)
    for name, p in named:
        if name in reached:  # the others keep whatever .grad they held
            p.grad = total[name].clone()
    return {name: g.clone() for name, g in total.items()}
