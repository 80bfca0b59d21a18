"""Takes the batch mean through x.view(-1), which only a contiguous input allows: an input
stored transposed or as a window of a wider buffer raises."""

EXPECT = r"only the strides differ|stored"
SELECT = "running_norm"
EDITS = [
    (
        "            mean = x.mean(dim=0)  # (num_features,)\n",
        "            mean = x.view(-1).view(x.shape).mean(dim=0)  # (num_features,)\n",
    ),
]
