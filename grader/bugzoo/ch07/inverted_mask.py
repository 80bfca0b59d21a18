"""The mask uses nn.MultiheadAttention's convention (True = blocked) where
F.scaled_dot_product_attention's (True = allowed) is required: only the future is seen."""

EXPECT = r"True means"


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)
