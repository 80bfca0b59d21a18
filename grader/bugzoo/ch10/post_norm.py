"""Post-norm block, as in the original Transformer: x = ln1(x + attn(x)), x = ln2(x + mlp(x)).
It runs and is causal, but the contract is pre-norm: the residual stream is renormalized at
every block instead of carried through untouched."""

EXPECT = r"residual|pre-norm"
SELECT = "block"


class Block(Block):
    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))
