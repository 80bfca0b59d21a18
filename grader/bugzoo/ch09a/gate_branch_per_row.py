"""The branch is taken per row (each row's mean) instead of on the batch's mean."""

EXPECT = r"batch mean|batch's mean|whole batch"
SELECT = "gate"


class NormalizedGate(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        up = h.mean(dim=-1, keepdim=True) > 0  # (B, 1)
        return torch.where(up, torch.relu(h), -torch.relu(-h)) / h.abs().amax()
