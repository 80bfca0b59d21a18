"""The causal mask's diagonal is shifted by one: every query may also look at the next key."""

EXPECT = r"i\+1|later|future"


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril(diagonal=1)
