"""The last axis is split with a view, but the head axis is never moved in front of time:
[B, T, H, Dh] is returned, which has the expected shape whenever T == H."""

EXPECT = r"transpose"


def split_heads(x, n_heads):
    B, T, E = x.shape
    return x.view(B, T, n_heads, E // n_heads)
