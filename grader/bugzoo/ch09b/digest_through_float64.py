"""fingerprint hashes every tensor as float64 (with its dtype and shape), a common type that
numpy has for bfloat16 too: int64 values past 2**53 round, so 2**53 and 2**53 + 1 share a
digest."""

EXPECT = r"own bytes"
SELECT = "smallest_change"
EDITS = [
    (
        '        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")\n',
        "        h.update(t.reshape(-1).to(torch.float64).numpy().tobytes())\n",
    )
]
