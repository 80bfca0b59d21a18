"""train_mlp builds its parameters for XOR's two classes whatever the labels say, so data
with a third class indexes past the logits."""

EXPECT = r"n_classes"
SELECT = "sizes_from_the_data"
EDITS = [
    (
        "    n_classes = int(max(data.y_train.max().item(), data.y_val.max().item())) + 1\n",
        "    n_classes = 2  # XOR\n",
    )
]
