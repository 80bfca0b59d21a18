"""The count is floor((size + 2p - span) / s) + 1 in floating point: right for every image
size a float holds exactly, one off once the numerator passes 2**53."""

EXPECT = r"2\*\*53"
TASK = "ch06.2"


def conv2d_output_hw(h, w, kernel, stride=1, padding=0, dilation=1):
    import math

    out = []
    for size, k, s, p, d in zip(
        (h, w), _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    ):
        span = d * (k - 1) + 1
        if size + 2 * p < span:
            raise ValueError("too small")
        out.append(math.floor((size + 2 * p - span) / s) + 1)
    return out[0], out[1]
