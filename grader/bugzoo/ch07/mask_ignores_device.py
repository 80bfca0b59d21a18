"""The mask is always built on the CPU: the device argument is accepted and ignored."""

EXPECT = r"requested device"
SELECT = "device"


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool).tril()
