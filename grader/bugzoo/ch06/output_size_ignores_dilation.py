"""The window is taken to span k pixels whatever the dilation."""

EXPECT = r"dilat"
SELECT = "output_size or small"


def conv2d_output_hw(h, w, kernel, stride=1, padding=0, dilation=1):
    out = []
    for size, k, s, p in zip((h, w), _pair(kernel), _pair(stride), _pair(padding)):
        if size + 2 * p < k:
            raise ValueError("kernel larger than the padded input")
        out.append((size + 2 * p - k) // s + 1)
    return out[0], out[1]
