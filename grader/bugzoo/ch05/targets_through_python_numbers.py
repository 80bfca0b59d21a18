"""pad_collate builds the targets with torch.tensor over their Python values (tensor targets
through .tolist()): every value survives, but torch.tensor infers the dtype afresh, so
float64, float16 or bfloat16 targets come back float32 and int32 or uint8 ones int64."""

EXPECT = r"keeps their dtype"
SELECT = "pad_collate"
EDITS = [
    (
        "    targets = torch.stack([torch.as_tensor(t) for _, t in batch])  # (B, ...)\n",
        "    targets = torch.tensor([t.tolist() if torch.is_tensor(t) else t for _, t in batch])\n",
    )
]
