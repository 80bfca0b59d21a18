"""init_mlp ignores the generator it is given and draws from the global random state, so
the parameters depend on whatever ran before."""

EXPECT = r"generator"
SELECT = "init"


def init_mlp(d_in, hidden, n_classes, generator):
    W1 = torch.randn(d_in, hidden) / math.sqrt(d_in)
    W2 = torch.randn(hidden, n_classes) / math.sqrt(hidden)
    params = {"W1": W1, "b1": torch.zeros(hidden), "W2": W2, "b2": torch.zeros(n_classes)}
    return {k: v.requires_grad_() for k, v in params.items()}
