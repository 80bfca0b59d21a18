"""train_mlp clears the gradients at the end of each step, after sgd_step (the
``step(); zero_grad()`` idiom), instead of first: the updates are the same, but the returned
parameters no longer hold the last step's gradients in .grad."""

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
        "        sgd_step(params, lr)\n        for p in params.values():\n            p.grad = None\n"
        "        train_loss.append(loss.item())\n",
    ),
]
