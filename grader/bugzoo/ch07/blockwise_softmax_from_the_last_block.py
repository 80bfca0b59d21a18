"""attention walks the keys flash-style in blocks of 128, from the last block to the first,
with a running maximum and sum. Exact wherever the last block holds an allowed key, but with
right padding (a row's allowed keys all among the first ones) the first block it meets is
fully masked: its maximum is -inf, exp(-inf - -inf) is nan, and the nan never leaves."""

EXPECT = r"holds nan"
SELECT = "per_example_mask"
TASK = "ch07.5"


def attention(q, k, v, mask=None):
    scale = 1 / math.sqrt(q.shape[-1])
    m = norm = acc = None
    for s in reversed(range(0, k.shape[-2], 128)):
        sc = q @ k[..., s : s + 128, :].transpose(-2, -1) * scale  # (..., Tq, block)
        if mask is not None:
            sc = sc.masked_fill(~mask[..., s : s + 128], float("-inf"))
        new_m = sc.amax(dim=-1, keepdim=True)
        if m is not None:
            new_m = torch.maximum(m, new_m)
        p = torch.exp(sc - new_m)
        pv = p @ v[..., s : s + 128, :]
        if m is None:
            norm, acc = p.sum(dim=-1, keepdim=True), pv
        else:
            corr = torch.exp(m - new_m)
            norm, acc = norm * corr + p.sum(dim=-1, keepdim=True), acc * corr + pv
        m = new_m
    return acc / norm
