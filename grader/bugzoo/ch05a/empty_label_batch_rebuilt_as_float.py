"""A label tensor is mapped value by value and rebuilt with torch.tensor(list).view(shape):
right for every batch that holds a label, but a batch of no labels comes back float32."""

EXPECT = r"holds no labels|no images and no labels"
TASK = "ch05a.3"

_MIRROR = {LEFT: RIGHT, RIGHT: LEFT, UP: UP, DOWN: DOWN}


def flip_with_label(image, label):
    flipped = torch.flip(image, dims=[-1])
    if isinstance(label, torch.Tensor):
        values = [_MIRROR[v] for v in label.flatten().tolist()]
        return flipped, torch.tensor(values).view(label.shape)
    return flipped, _MIRROR[label]
