"""receptive_field walks the layers backwards from one output pixel: a window of r pixels
after a layer needs (r - 1) * stride + dilation * (kernel - 1) + 1 before it. The other
order of the same recursion gives the same window."""


def receptive_field(layers):
    rf = [1, 1]
    for layer in reversed(list(layers)):
        if not isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):
            continue
        k, s = _pair(layer.kernel_size), _pair(layer.stride)
        d = _pair(getattr(layer, "dilation", 1))
        rf = [(rf[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 for i in range(2)]
    return rf[0], rf[1]
