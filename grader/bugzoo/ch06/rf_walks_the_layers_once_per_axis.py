"""receptive_field walks ``layers`` once per axis: a generator of layers is exhausted by the
height's pass, so the width sees no layer and comes out 1."""

EXPECT = r"generator|one pass"
SELECT = "one_shot"


def receptive_field(layers):
    def axis(i):
        rf, jump = 1, 1
        for layer in layers:
            if not isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):
                continue
            k, s = _pair(layer.kernel_size)[i], _pair(layer.stride)[i]
            rf += (k - 1) * _pair(getattr(layer, "dilation", 1))[i] * jump
            jump *= s
        return rf

    return axis(0), axis(1)
