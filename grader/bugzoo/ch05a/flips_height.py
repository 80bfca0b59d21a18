"""The flip runs along H (an upside-down mirror) instead of W; with H == W the shape is the
same."""

EXPECT = r"left-right|width|\(c, h, W-1-w\)"
SELECT = "flip"


def flip_with_label(image, label):
    flipped = torch.flip(image, dims=[-2])
    if isinstance(label, torch.Tensor):
        new = label.clone()
        new[label == LEFT] = RIGHT
        new[label == RIGHT] = LEFT
        return flipped, new
    return flipped, {LEFT: RIGHT, RIGHT: LEFT}.get(label, label)
