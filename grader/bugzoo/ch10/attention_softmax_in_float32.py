"""CausalSelfAttention takes its softmax in float32 and casts back ("for stability", as
mixed-precision code does): right for float32 and half-precision inputs, but a float64
module's attention weights keep only float32's seven digits."""

EXPECT = r"float64|float32|precision"
TASK = "ch10.4"
SELECT = "scale_on_other"
EDITS = [
    (
        "        out = scores.softmax(dim=-1) @ v  # (B, H, T, Dh)\n",
        "        out = scores.float().softmax(dim=-1).to(v.dtype) @ v  # (B, H, T, Dh)\n",
    )
]
