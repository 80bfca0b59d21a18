"""Only a label tensor with a batch dim is mapped element by element; a 0-d tensor (what a
Dataset's torch.tensor(label) gives) goes to the dict lookup for ints, where a tensor never
matches a key, so it comes back unchanged: a mirrored LEFT arrow keeps the label LEFT."""

EXPECT = r"0-d"
SELECT = "flip or label"
TASK = "ch05a.3"


def flip_with_label(image, label):
    flipped = torch.flip(image, dims=[-1])
    if isinstance(label, torch.Tensor) and label.dim() > 0:
        new = label.clone()
        new[label == LEFT] = RIGHT
        new[label == RIGHT] = LEFT
        return flipped, new
    return flipped, {LEFT: RIGHT, RIGHT: LEFT}.get(label, label)
