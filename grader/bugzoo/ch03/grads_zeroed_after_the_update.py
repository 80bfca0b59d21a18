"""train_mlp zeroes the gradients in place at the end of each step, after sgd_step, instead
of clearing them first: the updates are the same, but the returned parameters hold zeros in
.grad instead of the last step's gradients."""

EXPECT = r"\.grad|gradient"
TASK = "ch03.7"
SELECT = "sizes_from_the_data"
EDITS = [
    (
        "    for _ in range(steps):\n        for p in params.values():\n            p.grad = None\n",
        "    for _ in range(steps):\n",
    ),
    (
        "        sgd_step(params, lr)\n        train_loss.append(loss.item())\n",
        "        sgd_step(params, lr)\n        for p in params.values():\n            p.grad.zero_()\n"
        "        train_loss.append(loss.item())\n",
    ),
]
