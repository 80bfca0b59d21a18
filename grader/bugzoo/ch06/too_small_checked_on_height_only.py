"""Only the height is checked against the dilated kernel: a too-narrow input returns a
width of 0 or less instead of raising."""

EXPECT = r"ValueError|either axis|at least one axis"
SELECT = "too_small"


def conv2d_output_hw(h, w, kernel, stride=1, padding=0, dilation=1):
    kh, kw = _pair(kernel)
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    if h + 2 * ph < dh * (kh - 1) + 1:
        raise ValueError("kernel larger than the padded input")
    return (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
