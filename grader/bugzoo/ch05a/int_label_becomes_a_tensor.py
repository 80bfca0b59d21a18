"""flip_with_label wraps an int label in a 0-d tensor: it compares equal to the right int,
but a Dataset's targets change type after augmentation."""

EXPECT = r"int"
SELECT = "flip"


def flip_with_label(image, label):
    flipped = torch.flip(image, dims=[-1])
    if isinstance(label, torch.Tensor):
        new = label.clone()
        new[label == LEFT] = RIGHT
        new[label == RIGHT] = LEFT
        return flipped, new
    return flipped, torch.tensor({LEFT: RIGHT, RIGHT: LEFT}.get(label, label))
