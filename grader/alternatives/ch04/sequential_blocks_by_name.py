"""The blocks are chained by an ``nn.Sequential`` registered as ``chain`` (not ``blocks``),
and forward runs the chain. Each block is still a registered submodule, which is all the
contract asks: ``parameters()``, ``state_dict()``, ``.to()`` and ``.eval()`` reach it; the
attribute's name and the state_dict keys ("chain.0.linear.weight") are the module's own
business."""


class Encoder(nn.Module):
    def __init__(self, d_in: int = 2, hidden: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.chain = nn.Sequential(*[Block(hidden) for _ in range(depth)])

    def forward(self, x: Tensor) -> Tensor:
        return self.chain(torch.relu(self.stem(x)))
