"""The MLP is two linear maps with no GELU between them: one linear map in disguise."""

EXPECT = r"GELU"
SELECT = "pre_norm_residual"


class Block(Block):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__(n_embd, n_head, block_size)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd))
