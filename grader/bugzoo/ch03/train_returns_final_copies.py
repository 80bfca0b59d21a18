"""train_mlp hands back detached copies of its trained tensors ("the caller gets values, not
my graph"): the values are the last update's, but History.params are no longer the leaves
that training updated (held-out round 14's class: the returned params)."""

EXPECT = r"History\.params are the trained tensors"
SELECT = "sizes_from_the_data"
TASK = "ch03.7"
EDITS = [
    (
        "    return History(params, train_loss, val_acc)\n",
        "    return History({k: p.detach().clone() for k, p in params.items()}, train_loss, val_acc)\n",
    )
]
