"""The channels are moved with a view of the flattened pixels and a transpose: right on a
contiguous batch, a crash on a crop of a larger batch (a view whose memory is not in (B, H, W, C) order)."""

EXPECT = r"contiguous"
SELECT = "nhwc"
TASK = "ch06.5"


class ChannelsLastConv(nn.Module):
    def __init__(self, image_shape, out_channels, kernel_size=3):
        super().__init__()
        h, w, c = image_shape
        self.conv = nn.Conv2d(c, out_channels, kernel_size)

    def forward(self, images):
        b, h, w, c = images.shape
        return self.conv(images.view(b, h * w, c).transpose(1, 2).view(b, c, h, w))
