"""The blocks live in an ``nn.Sequential`` (the reading names it as the other registering
container; its keys are the same ``blocks.0.linear.weight`` ...), and ``RunningNorm`` uses
``torch.var_mean`` for the batch statistics, ``lerp_`` for the running update
(running + m * (batch - running) is (1 - m) * running + m * batch) and ``rsqrt`` to scale.
Registration, buffers and the arithmetic of the contract are unchanged."""


class Encoder(nn.Module):
    def __init__(self, d_in: int = 2, hidden: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.blocks = nn.Sequential(*[Block(hidden) for _ in range(depth)])

    def forward(self, x: Tensor) -> Tensor:
        return self.blocks(torch.relu(self.stem(x)))  # an empty Sequential passes h through


class RunningNorm(nn.Module):
    def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5) -> None:
        super().__init__()
        self.num_features = num_features
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x: Tensor) -> Tensor:
        if not self.training:
            return (x - self.running_mean) * torch.rsqrt(self.running_var + self.eps)
        if len(x) < 2:  # no rows at all has no variance either
            raise ValueError("a single row has no variance: give RunningNorm 2+ rows to train on")
        var, mean = torch.var_mean(x, dim=0, correction=0)  # biased: what normalises the batch
        with torch.no_grad():
            sample_var = x.var(dim=0, correction=1)  # unbiased: what the running estimate keeps
            buf_mean, buf_var = self.running_mean, self.running_var
            buf_mean.lerp_(mean.to(buf_mean.dtype), self.momentum)
            buf_var.lerp_(sample_var.to(buf_var.dtype), self.momentum)
        return (x - mean) * torch.rsqrt(var + self.eps)
