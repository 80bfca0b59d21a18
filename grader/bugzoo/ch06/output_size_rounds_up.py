"""The number of windows is rounded up, as if a window hanging over the edge still counted."""

import math

EXPECT = r"floor|round"
SELECT = "output_size or small"


def conv2d_output_hw(h, w, kernel, stride=1, padding=0, dilation=1):
    out = []
    for size, k, s, p, d in zip(
        (h, w), _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    ):
        span = d * (k - 1) + 1
        if size + 2 * p < span:
            raise ValueError("kernel larger than the padded input")
        out.append(math.ceil((size + 2 * p - span) / s) + 1)
    return out[0], out[1]
