"""The token embedding is built with padding_idx=0 (copied from NLP tutorials): id 0 is a
real character, the smallest in the vocabulary, and its embedding never gets a gradient
(held-out round 13)."""

EXPECT = r"no gradient.*padding index"
SELECT = "registered_and_trained"
TASK = "ch10.6"

EDITS = [
    (
        "        self.tok_emb = nn.Embedding(vocab_size, n_embd)\n",
        "        self.tok_emb = nn.Embedding(vocab_size, n_embd, padding_idx=0)\n",
    )
]
