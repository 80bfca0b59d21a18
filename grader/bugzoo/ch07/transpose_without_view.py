"""The time axis is moved first (transpose) and the result reshaped into heads, without
the view that splits E: each head's slice of features is interleaved with time."""

EXPECT = r"transpose"


def split_heads(x, n_heads):
    B, T, E = x.shape
    return x.transpose(1, 2).reshape(B, n_heads, T, E // n_heads)
