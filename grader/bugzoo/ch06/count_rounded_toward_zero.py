"""The window count is computed first and rounded toward zero (int(a / b)), and only a count
below 1 is refused: a padded input one pixel short of a stride-2 kernel gives
int(-1 / 2) + 1 = 1 window instead of ValueError. On every input that fits it is the floor."""

EXPECT = r"too-small configurations gave a size instead of ValueError"
SELECT = "every_small_configuration"


def conv2d_output_hw(h, w, kernel, stride=1, padding=0, dilation=1):
    out = []
    for size, k, s, p, d in zip(
        (h, w), _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    ):
        n = int((size + 2 * p - d * (k - 1) - 1) / s) + 1
        if n < 1:
            raise ValueError(f"no window fits an input of {size} with padding {p}")
        out.append(n)
    return out[0], out[1]
