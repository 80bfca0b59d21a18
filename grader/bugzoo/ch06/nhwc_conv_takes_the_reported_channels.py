"""The book's wrong fix: nn.Conv2d said "expected ... 3 channels, but got 224 channels", so
in_channels became the 224 it reported (the image height). It runs, sliding the kernel
over W and C."""

EXPECT = r"image height"
SELECT = "nhwc"
TASK = "ch06.5"


class ChannelsLastConv(nn.Module):
    def __init__(self, image_shape, out_channels, kernel_size=3):
        super().__init__()
        h, w, c = image_shape
        self.conv = nn.Conv2d(h, out_channels, kernel_size)

    def forward(self, images):
        return self.conv(images)
