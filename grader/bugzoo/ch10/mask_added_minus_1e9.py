"""An additive mask: the future's scores are lowered by 1e9 instead of set to -inf. A row
whose allowed scores all lie more than 1e9 below the future's (large weights) still hands
the future its weight."""

EXPECT = r"later positions|finite fill"
SELECT = "gradient_is_causal"
TASK = "ch10.4"

EDITS = [
    (
        'scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))',
        "scores = scores - 1e9 * (~self.allowed[:T, :T]).to(scores.dtype)",
    )
]
