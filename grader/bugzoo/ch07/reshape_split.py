"""Heads are split with a reshape: the right shape, but head 0 holds whole positions
0-1 instead of dims 0..Dh-1 of every position."""

EXPECT = r"reshape regroups memory"


def split_heads(x, n_heads):
    B, T, E = x.shape
    return x.reshape(B, n_heads, T, E // n_heads)
