"""fingerprint widens bfloat16 to float32 (which numpy has) before hashing its dtype, shape
and bytes: exact for every value, but a bfloat16 tensor and a float32 tensor of the same
values share a digest, though their dtypes differ (held-out round 14)."""

EXPECT = r"dtype change that keeps every value"
SELECT = "narrow_dtypes"
EDITS = [
    (
        "        t = obj.detach().cpu().contiguous()\n",
        "        t = obj.detach().cpu().contiguous()\n"
        "        if t.dtype == torch.bfloat16:\n"
        "            t = t.float()\n",
    )
]
