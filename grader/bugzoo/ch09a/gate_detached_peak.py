"""The peak stays a 0-d tensor but is detached: one graph and the right output, yet no
gradient flows through the division by the peak."""

EXPECT = r"gradient"
SELECT = "gate"


class NormalizedGate(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        peak = h.abs().amax().detach()
        gated = torch.where(h.mean() > 0, torch.relu(h), -torch.relu(-h))
        return gated / peak
