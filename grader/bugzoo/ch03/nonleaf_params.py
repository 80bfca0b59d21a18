"""requires_grad is set on the raw draw and the scaling happens after it, so every weight
is a non-leaf whose .grad backward never fills."""

EXPECT = r"leaf"


def init_mlp(d_in, hidden, n_classes, generator):
    W1 = torch.randn(d_in, hidden, generator=generator, requires_grad=True) / math.sqrt(d_in)
    W2 = torch.randn(hidden, n_classes, generator=generator, requires_grad=True) / math.sqrt(hidden)
    b1 = torch.zeros(hidden, requires_grad=True)
    b2 = torch.zeros(n_classes, requires_grad=True)
    return {"W1": W1, "b1": b1, "W2": W2, "b2": b2}
