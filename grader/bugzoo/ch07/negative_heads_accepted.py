"""Only zero heads are refused: a negative count divides E (8 % -2 == 0), so split_heads
reaches the view and raises RuntimeError instead of ValueError."""

EXPECT = r"positive divisor"
SELECT = "divisors"


def split_heads(x, n_heads):
    B, T, E = x.shape
    if n_heads == 0 or E % n_heads:
        raise ValueError(f"embedding size {E} is not divisible by n_heads={n_heads}")
    return x.view(B, T, n_heads, E // n_heads).transpose(1, 2)
