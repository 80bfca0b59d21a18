"""The loss flattens the targets with .view(-1): targets that are a slice of a bigger
tensor (get_batch written with one gather and two slices) make forward raise."""

EXPECT = r"laid out|contiguous"
SELECT = "mean_cross_entropy"

EDITS = [
    (
        "            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))\n",
        "            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.view(-1))\n",
    ),
]
