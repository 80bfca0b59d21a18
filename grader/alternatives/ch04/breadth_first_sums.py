"""The encoder's ``nn.ModuleList`` is filled by ``append`` in a loop; ``unregistered_state``
searches shallower modules before deeper ones (``named_modules`` stably sorted by depth), so
paths of different depths may come out in another order than a plain ``named_modules`` walk
gives; ``RunningNorm`` registers its buffers in the other order and computes its statistics
from sums (mean = sum / N, biased var = sum of squared deviations / N, unbiased / (N - 1)),
updating the buffers with ``mul_``/``add_(alpha=m)``. The contract fixes which paths are
reported, and which buffers exist, not their order."""


class Encoder(nn.Module):
    def __init__(self, d_in: int = 2, hidden: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.blocks = nn.ModuleList()
        for _ in range(depth):
            self.blocks.append(Block(hidden))

    def forward(self, x: Tensor) -> Tensor:
        out = torch.relu(self.stem(x))
        for index in range(len(self.blocks)):
            out = self.blocks[index](out)
        return out


def _unregistered_in(value: Any, path: str, seen: set[int]) -> list[str]:
    if isinstance(value, nn.Module | Tensor):
        return [] if id(value) in seen else [path]
    found: list[str] = []
    if isinstance(value, list | tuple):
        for position, item in enumerate(value):
            found += _unregistered_in(item, f"{path}[{position}]", seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _unregistered_in(item, f"{path}[{key!r}]", seen)
    return found


def _depth(name: str) -> int:
    return 0 if not name else name.count(".") + 1


def unregistered_state(model: nn.Module) -> list[str]:
    seen = {id(obj) for obj in (*model.modules(), *model.parameters(), *model.buffers())}
    found: list[str] = []
    # shallowest modules first (a stable sort keeps siblings in registration order)
    for prefix, module in sorted(model.named_modules(), key=lambda item: _depth(item[0])):
        for attr, value in vars(module).items():
            if attr in _MODULE_INTERNALS:
                continue
            found += _unregistered_in(value, f"{prefix}.{attr}" if prefix else attr, seen)
    return found


class RunningNorm(nn.Module):
    def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))

    def forward(self, x: Tensor) -> Tensor:
        if self.training:
            count = x.shape[0]
            if count <= 1:
                raise ValueError(f"cannot estimate a variance from {count} row(s) in training mode")
            mean = x.sum(dim=0) / count
            deviation = x - mean
            squares = (deviation * deviation).sum(dim=0)
            std = torch.sqrt(squares / count + self.eps)
            with torch.no_grad():
                m = self.momentum
                self.running_mean.mul_(1.0 - m).add_(mean, alpha=m)
                self.running_var.mul_(1.0 - m).add_(squares / (count - 1), alpha=m)
            return deviation / std
        std = torch.sqrt(self.running_var + self.eps)
        return (x - self.running_mean) / std
