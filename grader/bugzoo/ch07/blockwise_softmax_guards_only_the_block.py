"""attention walks the keys flash-style in blocks of 256 with a running maximum and sum, and
zeroes the nan of a fully masked block's own exponentials, but not the rescaling factor
exp(m_old - m_new): right after one masked leading block it is exp(-inf - finite) = 0 and all
is well, while after two masked blocks in a row it is exp(-inf - -inf) = nan. Only a run of
disallowed keys longer than two blocks (left padding of hundreds of keys) shows it."""

EXPECT = r"holds nan"
SELECT = "per_example_mask"
TASK = "ch07.5"


def attention(q, k, v, mask=None):
    scale = 1 / math.sqrt(q.shape[-1])
    m = norm = acc = None
    for s in range(0, k.shape[-2], 256):
        sc = q @ k[..., s : s + 256, :].transpose(-2, -1) * scale  # (..., Tq, block)
        if mask is not None:
            sc = sc.masked_fill(~mask[..., s : s + 256], float("-inf"))
        new_m = sc.amax(dim=-1, keepdim=True)
        if m is not None:
            new_m = torch.maximum(m, new_m)
        p = torch.exp(sc - new_m).nan_to_num(0.0)  # a fully masked block adds nothing
        pv = p @ v[..., s : s + 256, :]
        if m is None:
            norm, acc = p.sum(dim=-1, keepdim=True), pv
        else:
            corr = torch.exp(m - new_m)
            norm, acc = norm * corr + p.sum(dim=-1, keepdim=True), acc * corr + pv
        m = new_m
    return acc / norm
