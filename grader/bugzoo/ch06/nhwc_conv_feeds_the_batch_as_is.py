"""in_channels is C, but the channels-last batch goes into the conv unmoved: the original
error wherever H != C, a silent conv over (W, C) where H == C."""

EXPECT = r"dimension 1"
SELECT = "nhwc"
TASK = "ch06.5"


class ChannelsLastConv(nn.Module):
    def __init__(self, image_shape, out_channels, kernel_size=3):
        super().__init__()
        h, w, c = image_shape
        self.conv = nn.Conv2d(c, out_channels, kernel_size)

    def forward(self, images):
        return self.conv(images)
