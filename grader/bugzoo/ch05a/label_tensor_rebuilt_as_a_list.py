"""A label tensor is rebuilt from a flat list of mapped values: a 0-d label becomes a
one-element vector (1,) and a (B, K) label tensor loses its shape."""

EXPECT = r"0-d|shape"
SELECT = "flip or label"
TASK = "ch05a.3"

_MIRROR = {LEFT: RIGHT, RIGHT: LEFT, UP: UP, DOWN: DOWN}


def flip_with_label(image, label):
    flipped = torch.flip(image, dims=[-1])
    if isinstance(label, torch.Tensor):
        return flipped, torch.tensor([_MIRROR[v] for v in label.flatten().tolist()])
    return flipped, _MIRROR[label]
