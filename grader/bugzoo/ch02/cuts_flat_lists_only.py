"""A list counts only when its items are floats or tensors, so the nested list .tolist()
gives for a tensor of two or more dimensions is not seen as values leaving torch."""

EXPECT = r"nested lists"
SELECT = "other_dtypes"
EDITS = [
    (
        "        return any(_carries_values(o) for o in obj)\n",
        "        return any(isinstance(o, (float, Tensor)) and _carries_values(o) for o in obj)\n",
    )
]
