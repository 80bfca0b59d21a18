"""Every layer adds k-1 pixels, as if no earlier layer had a stride."""

EXPECT = r"stride|jump"
SELECT = "receptive"


def receptive_field(layers):
    rf = [1, 1]
    for layer in layers:
        if isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):
            k, d = _pair(layer.kernel_size), _pair(getattr(layer, "dilation", 1))
            rf = [rf[i] + (k[i] - 1) * d[i] for i in range(2)]
    return rf[0], rf[1]
