"""Only float32 and float64 results count as carrying values, so the cuts of half-precision
(float16, bfloat16) tensors in mixed-precision code are missed."""

EXPECT = r"half precision"
SELECT = "other_dtypes"
EDITS = [
    (
        "        return obj.is_floating_point() or obj.is_complex()\n",
        "        return obj.dtype in (torch.float32, torch.float64)\n",
    )
]
