"""torch.fliplr sounds like the left-right mirror, but it flips dim 1: the rows of a (C, H, W)
image (an upside-down picture) or the channels of a (B, C, H, W) batch."""

EXPECT = r"left-right|width|\(c, h, W-1-w\)"
SELECT = "flip"


def flip_with_label(image, label):
    flipped = torch.fliplr(image)
    if isinstance(label, torch.Tensor):
        new = label.clone()
        new[label == LEFT] = RIGHT
        new[label == RIGHT] = LEFT
        return flipped, new
    return flipped, {LEFT: RIGHT, RIGHT: LEFT}.get(label, label)
