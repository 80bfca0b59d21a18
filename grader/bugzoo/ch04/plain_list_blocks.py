"""The chapter's broken Encoder: the blocks live in a plain Python list, so parameters(),
state_dict(), .to() and the optimizer never see them."""

EXPECT = r"plain (python )?list"


class Encoder(nn.Module):
    def __init__(self, d_in=2, hidden=16, depth=3):
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.blocks = [Block(hidden) for _ in range(depth)]

    def forward(self, x):
        h = torch.relu(self.stem(x))
        for block in self.blocks:
            h = block(h)
        return h
