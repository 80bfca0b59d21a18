"""train_mlp takes the number of distinct labels in both splits as the class count, so
labels all 1 build a one-column head, and label 1 indexes past it (held-out round 12)."""

EXPECT = r"distinct ones there are is"
TASK = "ch03.7"
SELECT = "sizes_from_the_data"
EDITS = [
    (
        "    n_classes = int(max(data.y_train.max().item(), data.y_val.max().item())) + 1\n",
        "    n_classes = len(torch.unique(torch.cat([data.y_train, data.y_val])))\n",
    )
]
