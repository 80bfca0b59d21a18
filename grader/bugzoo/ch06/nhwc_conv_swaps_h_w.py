"""The channels are moved with transpose(1, 3), which also swaps height and width: the
kernel slides over the transposed image (on square images the shape cannot tell)."""

EXPECT = r"height and width are swapped"
SELECT = "nhwc"
TASK = "ch06.5"


class ChannelsLastConv(nn.Module):
    def __init__(self, image_shape, out_channels, kernel_size=3):
        super().__init__()
        h, w, c = image_shape
        self.conv = nn.Conv2d(c, out_channels, kernel_size)

    def forward(self, images):
        return self.conv(images.transpose(1, 3))
