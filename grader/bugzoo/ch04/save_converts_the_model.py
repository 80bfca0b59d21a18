"""Converts the model to float32 before saving, so the checkpoint 'travels anywhere': the
caller's float64 model is float32 from then on (on a GPU, model.cpu() does the same to its
device)."""

EXPECT = r"stays where and what it is|changed its argument `model`"
SELECT = "checkpoint"
EDITS = [
    (
        "    path = Path(path)\n    torch.save(\n",
        "    path = Path(path)\n    model.float()\n    torch.save(\n",
    ),
]
