"""ChannelsLastConv moves the channels only when the batch does not already look
channels-first: a batch whose height is at most four and whose last axis is larger is fed
to the conv unmoved, so six channels of height 4 reach it as four 'channels'."""

EXPECT = r"dimension 1|permute"
SELECT = "nhwc"


def _forward(self, images):
    if images.shape[-1] not in (1, 2, 3, 4) and images.shape[1] in (1, 2, 3, 4):
        return self.conv(images)
    return self.conv(images.permute(0, 3, 1, 2))


ChannelsLastConv.forward = _forward
