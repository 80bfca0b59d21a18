"""The weights are scaled by 1/sqrt(fan_out) instead of 1/sqrt(fan_in)."""

EXPECT = r"fan_in"


def init_mlp(d_in, hidden, n_classes, generator):
    W1 = torch.randn(d_in, hidden, generator=generator) / math.sqrt(hidden)
    W2 = torch.randn(hidden, n_classes, generator=generator) / math.sqrt(n_classes)
    params = {"W1": W1, "b1": torch.zeros(hidden), "W2": W2, "b2": torch.zeros(n_classes)}
    return {k: v.requires_grad_() for k, v in params.items()}
