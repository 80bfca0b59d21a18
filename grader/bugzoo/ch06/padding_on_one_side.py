"""Adds the padding once (h + p) instead of on both sides (h + 2p)."""

EXPECT = r"padding|both sides|nn.Conv2d"
SELECT = "output_size"


def conv2d_output_hw(h, w, kernel, stride=1, padding=0, dilation=1):
    out = []
    for size, k, s, p, d in zip(
        (h, w), _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    ):
        span = d * (k - 1) + 1
        if size + p < span:
            raise ValueError("too small")
        out.append((size + p - span) // s + 1)
    return out[0], out[1]
