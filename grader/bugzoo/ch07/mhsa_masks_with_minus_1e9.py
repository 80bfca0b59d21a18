"""MultiHeadSelfAttention masks its own scores with -1e9 instead of calling attention_weights:
right until the allowed scores fall below -1e9 (q and k of size 1e5 pointing apart), where
the later positions take all the weight."""

EXPECT = r"finite fill"
SELECT = "whatever"
TASK = "ch07.6"
EDITS = [
    (
        "        weights = attention_weights(q, k, mask)  # (B, H, T, T)\n",
        "        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
        "        if mask is not None:\n"
        "            scores = scores.masked_fill(~mask, -1e9)\n"
        "        weights = scores.softmax(dim=-1)\n",
    )
]
