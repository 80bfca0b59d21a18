"""train_mlp keeps the values of the step with the best validation accuracy and writes them
back into the trained leaves before returning ("restore the best model"): the same tensor
objects, but holding an earlier step's values, not the last update's (held-out round 14's
class: the returned params)."""

EXPECT = r"History\.params are the trained tensors"
SELECT = "sizes_from_the_data"
TASK = "ch03.7"
EDITS = [
    (
        "        val_acc.append(accuracy(params, data.X_val, data.y_val, forward))\n",
        "        val_acc.append(accuracy(params, data.X_val, data.y_val, forward))\n"
        "        if val_acc[-1] >= max(val_acc):  # the latest of the best\n"
        "            best = {k: p.detach().clone() for k, p in params.items()}\n",
    ),
    (
        "    return History(params, train_loss, val_acc)\n",
        "    if steps:\n"
        "        with torch.no_grad():\n"
        "            for k, p in params.items():\n"
        "                p.copy_(best[k])\n"
        "    return History(params, train_loss, val_acc)\n",
    ),
]
