"""permute(0, 2, 3, 1), the move from channels-first to channels-last, applied in the
wrong direction: [B, H, W, C] becomes [B, W, C, H]."""

EXPECT = r"opposite move"
SELECT = "nhwc"
TASK = "ch06.5"


class ChannelsLastConv(nn.Module):
    def __init__(self, image_shape, out_channels, kernel_size=3):
        super().__init__()
        h, w, c = image_shape
        self.conv = nn.Conv2d(c, out_channels, kernel_size)

    def forward(self, images):
        return self.conv(images.permute(0, 2, 3, 1))
