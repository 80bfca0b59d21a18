"""The conv is built with a 3x3 kernel whatever kernel_size says: invisible at the default,
a different conv (and feature size) for every other kernel size."""

EXPECT = r"kernel_size"
SELECT = "nhwc"
TASK = "ch06.5"


class ChannelsLastConv(nn.Module):
    def __init__(self, image_shape, out_channels, kernel_size=3):
        super().__init__()
        h, w, c = image_shape
        self.conv = nn.Conv2d(c, out_channels, 3)

    def forward(self, images):
        return self.conv(images.permute(0, 3, 1, 2))
