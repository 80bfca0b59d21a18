"""GPT.forward takes its loss as -log(softmax + 1e-9) at the target ("to avoid log(0)"): in
float32 the epsilon vanishes below rounding, but a float64 model's loss is off by about
1e-9 / p at every position, and no longer the cross-entropy of its logits."""

EXPECT = r"cross-entropy|float64"
TASK = "ch10.6"
SELECT = "cross_entropy_at_every_size"
EDITS = [
    (
        "            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))\n",
        "            probs = logits.reshape(B * T, -1).softmax(dim=-1) + 1e-9\n"
        "            loss = -probs.log().gather(1, targets.reshape(B * T, 1)).mean()\n",
    )
]
