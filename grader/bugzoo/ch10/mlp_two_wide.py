"""The block's MLP is only 2x wide: causal, pre-norm and residual, but it is not the
reading's block (a 4x-wide MLP) and has half the MLP parameters."""

EXPECT = r"4x|4 \* n_embd|wide"
SELECT = "block"
EDITS = [
    (
        "nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)",
        "nn.Linear(n_embd, 2 * n_embd), nn.GELU(), nn.Linear(2 * n_embd, n_embd)",
    )
]
