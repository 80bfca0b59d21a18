"""causal_mask picks a device itself when none is given (cuda when available, else the CPU)
instead of leaving device=None to torch, so it ignores the caller's default device."""

EXPECT = r"default device"
SELECT = "default_device"
EDITS = [
    (
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()\n",
        "    if device is None:\n"
        '        device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "    return torch.ones(T, T, dtype=torch.bool, device=device).tril()\n",
    )
]
