"""train_mlp counts the distinct training labels as the class count, so training labels
{0, 2} (class 1 absent) build a two-column head, and label 2 indexes past it (held-out
round 12's classes_counted_by_unique counted both splits' distinct labels)."""

EXPECT = r"distinct ones there are is"
TASK = "ch03.7"
SELECT = "sizes_from_the_data"
EDITS = [
    (
        "    n_classes = int(max(data.y_train.max().item(), data.y_val.max().item())) + 1\n",
        "    n_classes = len(set(data.y_train.tolist()))\n",
    )
]
