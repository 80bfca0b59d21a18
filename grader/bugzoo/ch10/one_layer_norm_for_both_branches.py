"""One LayerNorm normalizes the input of both branches: at initialization (weight 1,
bias 0) the block computes exactly what two would, but it has half the normalization
parameters, other state_dict keys, and after training both branches share one scale."""

EXPECT = r"LayerNorm"
SELECT = "block"
TASK = "ch10.5"


class Block(Block):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__(n_embd, n_head, block_size)
        del self.ln2

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln1(x))
