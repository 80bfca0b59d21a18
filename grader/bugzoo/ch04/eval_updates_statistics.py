"""Updates the running statistics on every call, eval mode included: evaluating on
validation data changes the model."""

EXPECT = r"eval"
SELECT = "running_norm"


class RunningNorm(RunningNorm):
    def forward(self, x):
        if self.training:
            mean, var = x.mean(dim=0), x.var(dim=0, unbiased=False)
        else:
            mean, var = self.running_mean.clone(), self.running_var.clone()
        with torch.no_grad():
            self.running_mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(dim=0))
            self.running_var.mul_(1 - self.momentum).add_(self.momentum * x.var(dim=0))
        return (x - mean) / torch.sqrt(var + self.eps)
