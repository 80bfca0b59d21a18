"""nonfinite is looked for through the optimizer: gradients and values are read from the
tensors its param groups hold (named through the model), so a parameter that requires grad
but that the optimizer does not hold is never inspected, although its gradient turned inf or
nan (the held-out round 12 answer nonfinite_grads_of_held_only filters named_parameters() by
the optimizer's ids for the gradients only)."""

EXPECT = r"nonfinite found at .*whoever holds it"
SELECT = "nonfinite_gradients_and_parameters"
TASK = "ch08.2"

EDITS = [
    (
        "                if not torch.isfinite(p.grad).all():\n"
        "                    nonfinite.setdefault(\n"
        '                        n, f"its gradient became non-finite at step {len(losses) - 1}"\n'
        "                    )\n"
        "                elif p.grad.abs().sum() > 0:\n"
        "                    nonzero_grad.add(n)\n"
        "        optimizer.step()\n",
        "                if torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0:\n"
        "                    nonzero_grad.add(n)\n"
        "        for p in held:  # what the optimizer is about to step\n"
        "            n = name_of.get(id(p))\n"
        "            if n is not None and p.grad is not None and not torch.isfinite(p.grad).all():\n"
        '                nonfinite.setdefault(n, f"its gradient became non-finite at step {len(losses) - 1}")\n'
        "        optimizer.step()\n",
    ),
    (
        "    for n, p in named.items():\n        if not torch.isfinite(p.detach()).all():\n",
        "    for p in held:\n"
        "        n = name_of.get(id(p))\n"
        "        if n is not None and not torch.isfinite(p.detach()).all():\n",
    ),
]
