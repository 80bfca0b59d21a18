"""attention_weights turns the bool mask into an additive bias made in the default dtype
(float32), which promotes float16, bfloat16 and float64 scores to float32."""

EXPECT = r"float32 and promotes"
SELECT = "half_bfloat16 or cast_to_another"
EDITS = [
    (
        '        scores = scores.masked_fill(~mask, float("-inf"))\n',
        '        scores = scores + torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))\n',
    )
]
