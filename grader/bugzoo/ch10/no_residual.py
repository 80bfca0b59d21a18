"""The block drops its residual connections: x = attn(ln1(x)), then mlp(ln2(x)).
Still causal and still mixing the past, but the input no longer flows through."""

EXPECT = r"residual"
SELECT = "block"


class Block(Block):
    def forward(self, x):
        x = self.attn(self.ln1(x))
        return self.mlp(self.ln2(x))
