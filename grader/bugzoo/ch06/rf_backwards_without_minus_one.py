"""The backward recursion r_in = r_out * stride + (k - 1) * dilation, missing the '- 1':
right for stride-1 stacks, too large after any stride."""

EXPECT = r"stride|jump|receptive"
SELECT = "receptive"


def receptive_field(layers):
    geo = [m for m in layers if isinstance(m, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d))]
    r = [1, 1]
    for layer in reversed(geo):
        k, s = _pair(layer.kernel_size), _pair(layer.stride)
        d = _pair(getattr(layer, "dilation", 1))
        r = [r[i] * s[i] + (k[i] - 1) * d[i] for i in range(2)]
    return r[0], r[1]
