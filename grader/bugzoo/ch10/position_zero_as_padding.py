"""The position embedding is built with padding_idx=0: position 0 is read by every
sequence, but its embedding is frozen at its initial value and never learns."""

EXPECT = r"no gradient.*padding index"
SELECT = "registered_and_trained"
TASK = "ch10.6"

EDITS = [
    (
        "        self.pos_emb = nn.Embedding(block_size, n_embd)\n",
        "        self.pos_emb = nn.Embedding(block_size, n_embd, padding_idx=0)\n",
    )
]
