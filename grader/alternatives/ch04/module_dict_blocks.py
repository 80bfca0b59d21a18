"""The blocks live in an ``nn.ModuleDict`` under names of their own ("block0", "block1",
...), and forward runs them in insertion order. Every block is still a registered
submodule: ``parameters()``, ``state_dict()``, ``.to()`` and ``.eval()`` reach it, which is
all the contract asks. Only the state_dict keys differ from a list's ("blocks.block0...").
"""


class Encoder(nn.Module):
    def __init__(self, d_in: int = 2, hidden: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.blocks = nn.ModuleDict({f"block{i}": Block(hidden) for i in range(depth)})

    def forward(self, x: Tensor) -> Tensor:
        h = torch.relu(self.stem(x))
        for block in self.blocks.values():
            h = block(h)
        return h
