"""The position code is a random table drawn once and registered as a buffer: every
position gets its own vector, so a repeated character still looks different at each
position, but no training step can ever change how positions are encoded (the reading's
position embedding is learned)."""

EXPECT = r"position.*fixed.*learned"
SELECT = "registered_and_trained"
TASK = "ch10.6"

EDITS = [
    (
        "        self.pos_emb = nn.Embedding(block_size, n_embd)\n",
        '        self.register_buffer("pos_code", 0.02 * torch.randn(block_size, n_embd))\n',
    ),
    (
        "        x = self.tok_emb(idx) + self.pos_emb(pos)  # (B, T, C)\n",
        "        x = self.tok_emb(idx) + self.pos_code[pos]  # (B, T, C)\n",
    ),
]
