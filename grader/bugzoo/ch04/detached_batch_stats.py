"""The batch mean and variance are detached before normalising: the forward matches
BatchNorm, but no gradient flows through the statistics, so the input gradient is wrong."""

EXPECT = r"gradient of the input|inside the graph"
SELECT = "running_norm"


class RunningNorm(nn.Module):
    """Per-feature normalisation of (N, num_features) inputs with running statistics.

    Training mode: normalise with the batch mean and biased variance, and update the buffers
    ``running_mean`` / ``running_var`` (unbiased batch variance) as
    running = (1 - momentum) * running + momentum * batch. Eval mode: use the buffers.
    The statistics are buffers: moved by .to(), saved in state_dict(), never trained.
    Numerically the same as ``nn.BatchNorm1d(num_features, affine=False)``.
    """

    def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5) -> None:
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x: Tensor) -> Tensor:
        if self.training:
            mean = x.mean(dim=0).detach()  # (num_features,)
            var = x.var(dim=0, unbiased=False).detach()  # (num_features,)
            with torch.no_grad():  # statistics are bookkeeping, not part of the graph
                n = x.shape[0]
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)
                self.running_var.mul_(1 - self.momentum).add_(self.momentum * var * n / (n - 1))
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps)  # (N, num_features)
