"""Only convolutions are counted; pooling windows and their strides are skipped."""

EXPECT = r"pool"
SELECT = "receptive"


def receptive_field(layers):
    rf, jump = [1, 1], [1, 1]
    for layer in layers:
        if isinstance(layer, nn.Conv2d):
            k, s, d = _pair(layer.kernel_size), _pair(layer.stride), _pair(layer.dilation)
            for i in range(2):
                rf[i] += (k[i] - 1) * d[i] * jump[i]
                jump[i] *= s[i]
    return rf[0], rf[1]
