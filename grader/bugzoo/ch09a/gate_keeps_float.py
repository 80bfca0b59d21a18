"""The print and the branch are gone, but the peak is still pulled out as a Python float
(float() calls .item()), which breaks the graph — and fullgraph=True does not notice."""

EXPECT = r"item"
SELECT = "gate"


class NormalizedGate(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        peak = float(h.abs().amax())
        gated = torch.where(h.mean() > 0, torch.relu(h), -torch.relu(-h))
        return gated / peak
