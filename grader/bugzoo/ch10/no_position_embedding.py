"""The model adds no position embedding: a sequence of one repeated token looks the same
at every position."""

EXPECT = r"position"
SELECT = "gpt_never or square"


class GPT(GPT):
    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.tok_emb(idx)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss
