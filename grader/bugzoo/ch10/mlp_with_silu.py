"""The MLP applies SiLU (LLaMA's activation) between its two linear maps instead of GELU: a
smooth curve close to GELU's, but other outputs for the same weights."""

EXPECT = r"applies SiLU.*GELU"
SELECT = "pre_norm_residual"
TASK = "ch10.5"

EDITS = [
    (
        "            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)\n",
        "            nn.Linear(n_embd, 4 * n_embd), nn.SiLU(), nn.Linear(4 * n_embd, n_embd)\n",
    )
]
