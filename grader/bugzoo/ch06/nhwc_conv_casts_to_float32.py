"""ChannelsLastConv.forward converts the moved batch with .float() ("loaders hand out uint8
images"): right for a float32 model, but a model moved to float64 (.double()) then feeds its
float64 conv a float32 batch and raises, where the contract's forward is just the conv over
H and W of the batch moved to [B, C, H, W], in the dtype the model and batch share."""

EXPECT = r"float64|dtype"
SELECT = "nhwc"
TASK = "ch06.5"

EDITS = [
    (
        "        return self.conv(images.permute(0, 3, 1, 2))  # (B, H, W, C) -> (B, C, H, W)\n",
        "        return self.conv(images.permute(0, 3, 1, 2).float())\n",
    )
]
