"""pad_collate stacks vector targets, but gathers 0-d targets (class labels) with
torch.tensor([t.item() ...]): float64 or float16 labels come back float32, int32 or uint8
ones int64, though stacking keeps the dtype the dataset gave."""

EXPECT = r"keeps their dtype"
SELECT = "pad_collate"
EDITS = [
    (
        "    targets = torch.stack([torch.as_tensor(t) for _, t in batch])  # (B, ...)\n",
        "    items = [torch.as_tensor(t) for _, t in batch]\n"
        "    if items[0].dim() == 0:\n"
        "        targets = torch.tensor([t.item() for t in items])\n"
        "    else:\n"
        "        targets = torch.stack(items)\n",
    )
]
