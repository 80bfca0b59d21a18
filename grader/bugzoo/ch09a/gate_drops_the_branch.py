"""The data-dependent branch is 'fixed' by always taking the positive side: one graph,
but a batch with a negative mean is gated wrongly."""

EXPECT = r"branch|negative"
SELECT = "gate"


class NormalizedGate(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        return torch.relu(h) / h.abs().amax()
