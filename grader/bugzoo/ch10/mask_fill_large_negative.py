"""Masked scores are filled with -1e4 instead of -inf (a finite fill, common in float16
code): when every allowed score of a row lies below -1e4 (large weights), the masked future
gets the weight after the softmax. Held-out round 10."""

EXPECT = r"later positions|finite fill"
SELECT = "gradient_is_causal"
TASK = "ch10.4"

EDITS = [
    (
        'scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))',
        "scores = scores.masked_fill(~self.allowed[:T, :T], -1e4)",
    )
]
