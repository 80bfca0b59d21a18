"""The returned dict is filtered on ``p.grad is not None``, so a parameter the loss never
reaches (a submodule the forward skips, a weight used through .detach()) has no entry,
although it is a trainable parameter with a full-batch gradient of zero (held-out round 9,
unreached_params_left_out)."""

EXPECT = r"no entry for"
SELECT = "accumulated_grad"
TASK = "ch02.4"
EDITS = [
    (
        "        name: (p.grad.clone() if p.grad is not None else torch.zeros_like(p))\n",
        "        name: p.grad.clone()\n",
    ),
    ("        if p.requires_grad\n    }", "        if p.grad is not None\n    }"),
]
