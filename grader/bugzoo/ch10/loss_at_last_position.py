"""GPT's loss scores only the last position of each sequence (as in a classifier), not
all B*T next-token predictions."""

EXPECT = r"cross.entropy|B\*T"
SELECT = "cross_entropy"


class GPT(GPT):
    def forward(self, idx, targets=None):
        logits, _ = super().forward(idx)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits[:, -1, :], targets[:, -1])
        return logits, loss
