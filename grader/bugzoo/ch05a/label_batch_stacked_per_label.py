"""A label tensor is mapped one 0-d tensor at a time and put back together with
torch.stack(...).view(label.shape): right for every batch that holds a label, but a
batch of no labels raises (stack needs at least one tensor)."""

EXPECT = r"no images and no labels|empty"
TASK = "ch05a.3"

_MIRROR = {LEFT: RIGHT, RIGHT: LEFT, UP: UP, DOWN: DOWN}


def flip_with_label(image, label):
    flipped = torch.flip(image, dims=[-1])
    if isinstance(label, torch.Tensor):
        mapped = [torch.tensor(_MIRROR[int(v)]) for v in label.flatten()]
        return flipped, torch.stack(mapped).view(label.shape)
    return flipped, _MIRROR[label]
