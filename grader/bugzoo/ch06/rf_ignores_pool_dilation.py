"""Dilation is read from convolutions only; a dilated max pool is counted as if its
window were dense."""

EXPECT = r"dilation"
SELECT = "receptive"


def receptive_field(layers):
    rf, jump = [1, 1], [1, 1]
    for layer in layers:
        if not isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):
            continue
        k, s = _pair(layer.kernel_size), _pair(layer.stride)
        d = _pair(layer.dilation) if isinstance(layer, nn.Conv2d) else (1, 1)
        for i in range(2):
            rf[i] += (k[i] - 1) * d[i] * jump[i]
            jump[i] *= s[i]
    return rf[0], rf[1]
