"""GPT.forward computes its loss from logits cast to float32 (the mixed-precision habit of
"loss in float32"): a float64 model's loss comes back float32, rounded to seven digits."""

EXPECT = r"cross-entropy|float64"
TASK = "ch10.6"
SELECT = "cross_entropy_at_every_size"
EDITS = [
    (
        "            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))\n",
        "            loss = F.cross_entropy(logits.reshape(B * T, -1).float(), targets.reshape(B * T))\n",
    )
]
