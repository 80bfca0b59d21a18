"""attention_weights fills disallowed scores with -1e4, the 'fp16-safe' constant, instead of
-inf: exact on ordinary scores, but where every allowed score lies below -1e4 the
disallowed keys win the softmax."""

EXPECT = r"finite fill"
SELECT = "whatever"
TASK = "ch07.4"
EDITS = [
    (
        '        scores = scores.masked_fill(~mask, float("-inf"))\n',
        "        scores = scores.masked_fill(~mask, -1e4)\n",
    )
]
