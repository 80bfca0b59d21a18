"""The image is mirrored and the label kept: every flipped LEFT arrow is now labelled LEFT
while it points RIGHT."""

EXPECT = r"label"
SELECT = "flip"


def flip_with_label(image, label):
    return torch.flip(image, dims=[-1]), label
