"""The head reads the last block's output directly: ln_f is built but never applied, so
the logits grow with the residual stream."""

EXPECT = r"LayerNorm|never reaches"
SELECT = "layer_norm or registered"


class GPT(GPT):
    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss
