"""fingerprint widens every signed integer tensor to int64 before hashing its dtype, shape
and bytes (one integer type for all): an int8 tensor and an int64 tensor of the same values
share a digest, though their dtypes differ."""

EXPECT = r"dtype change that keeps every value"
SELECT = "narrow_dtypes"
EDITS = [
    (
        "        t = obj.detach().cpu().contiguous()\n",
        "        t = obj.detach().cpu().contiguous()\n"
        "        if t.dtype in (torch.int8, torch.int16, torch.int32):\n"
        "            t = t.to(torch.int64)\n",
    )
]
