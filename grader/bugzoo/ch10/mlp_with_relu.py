"""The MLP applies ReLU between its two linear maps instead of GELU: the same shapes and
the same parameters, but other outputs for the same weights (the reading names GELU)."""

EXPECT = r"applies ReLU.*GELU"
SELECT = "pre_norm_residual"
TASK = "ch10.5"

EDITS = [
    (
        "            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)\n",
        "            nn.Linear(n_embd, 4 * n_embd), nn.ReLU(), nn.Linear(4 * n_embd, n_embd)\n",
    )
]
