"""causal_mask compares position indices (query i may see key j when j <= i) built on the
device with arange, instead of taking tril of ones: the same bool [T, T] mask."""


def causal_mask(T, device=None):
    i = torch.arange(T, device=device)
    return i[:, None] >= i[None, :]
