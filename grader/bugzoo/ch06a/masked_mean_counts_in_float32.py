"""masked_mean converts the count of valid positions with .float(), so a float16 or
bfloat16 x gives a float32 mean."""

EXPECT = r"keeps x's floating dtype"
SELECT = "half_bfloat16"
EDITS = [
    (
        "    count = keep.sum(dim=dim).clamp(min=1).to(x.dtype)  # valid positions, at least 1\n",
        "    count = keep.sum(dim=dim).clamp(min=1).float()  # valid positions, at least 1\n",
    )
]
