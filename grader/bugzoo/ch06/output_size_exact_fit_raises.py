"""The fit check uses <= instead of <: a dilated kernel that exactly fills the padded
input (one window) is refused, so an 8x8 image cannot reach SmallCNN's head."""

EXPECT = r"exactly fits|one window|cannot run"
SELECT = "just_fits or head"


def conv2d_output_hw(h, w, kernel, stride=1, padding=0, dilation=1):
    out = []
    for size, k, s, p, d in zip(
        (h, w), _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    ):
        span = d * (k - 1) + 1
        if size + 2 * p <= span:
            raise ValueError("kernel larger than the padded input")
        out.append((size + 2 * p - span) // s + 1)
    return out[0], out[1]
