"""Sums the micro-batch gradients into buffers started with torch.zeros(p.shape), on the
default CPU: right for a CPU model, but a CUDA model's gradients cannot be added in."""

EXPECT = r"meta"
SELECT = "stays_on"
TASK = "ch02.4"

EDITS = [
    (
        "    model.zero_grad(set_to_none=True)  # stale gradients from earlier backward calls\n",
        "    model.zero_grad(set_to_none=True)  # stale gradients from earlier backward calls\n"
        "    total = {name: torch.zeros(p.shape, dtype=p.dtype) for name, p in model.named_parameters()}\n",
    ),
    (
        "        (loss_fn(model(x_part), y_part) * share).backward()\n",
        "        model.zero_grad(set_to_none=True)\n"
        "        (loss_fn(model(x_part), y_part) * share).backward()\n"
        "        for name, p in model.named_parameters():\n"
        "            if p.grad is not None:\n"
        "                total[name] += p.grad\n"
        "    for name, p in model.named_parameters():\n"
        "        p.grad = total[name].clone()\n",
    ),
]
