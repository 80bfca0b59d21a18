"""The block adds both branches to its input in parallel, x + attn(ln1(x)) + mlp(ln2(x)):
causal and pre-norm, but the MLP never sees what attention just wrote."""

EXPECT = r"mlp\(ln2\(h\)\)"
SELECT = "pre_norm_residual"


class Block(Block):
    def forward(self, x):
        return x + self.attn(self.ln1(x)) + self.mlp(self.ln2(x))
