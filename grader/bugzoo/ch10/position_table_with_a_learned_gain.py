"""The position code is the original Transformer's fixed sinusoidal table times one
learned gain: training can only scale the whole table, never shape any position's vector
(the reading's position embedding gives each position its own learned vector)."""

EXPECT = r"only 1 of the \d+ directions.*own learned vector"
SELECT = "registered_and_trained"
TASK = "ch10.6"

EDITS = [
    (
        "        self.pos_emb = nn.Embedding(block_size, n_embd)\n",
        "        t = torch.arange(block_size, dtype=torch.float32)[:, None]\n"
        "        freq = torch.exp(torch.arange(0, n_embd, 2) * (-math.log(10000.0) / n_embd))\n"
        "        table = torch.zeros(block_size, n_embd)\n"
        "        table[:, 0::2] = torch.sin(t * freq)\n"
        "        table[:, 1::2] = torch.cos(t * freq)[:, : n_embd // 2]\n"
        '        self.register_buffer("pos_table", table)\n'
        "        self.pos_gain = nn.Parameter(torch.tensor(0.02))\n",
    ),
    (
        "        x = self.tok_emb(idx) + self.pos_emb(pos)  # (B, T, C)\n",
        "        x = self.tok_emb(idx) + self.pos_gain * self.pos_table[pos]  # (B, T, C)\n",
    ),
]
