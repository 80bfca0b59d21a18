"""in_channels is C, but the batch gets its [B, C, H, W] shape from a reshape: the conv
runs over scrambled colour planes."""

EXPECT = r"reshape"
SELECT = "nhwc"
TASK = "ch06.5"


class ChannelsLastConv(nn.Module):
    def __init__(self, image_shape, out_channels, kernel_size=3):
        super().__init__()
        h, w, c = image_shape
        self.conv = nn.Conv2d(c, out_channels, kernel_size)

    def forward(self, images):
        b, h, w, c = images.shape
        return self.conv(images.reshape(b, c, h, w))
