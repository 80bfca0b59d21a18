"""The mirror is a numpy lookup table indexed by the label: a tensor label gets the table as
a tensor, but an int label comes back as the table's numpy.int64, not the int that went in;
it compares equal to the right int, so only its type tells them apart."""

import numpy as np

EXPECT = r"numpy"
SELECT = "flip"
TASK = "ch05a.3"

_MIRROR = np.array([RIGHT, LEFT, UP, DOWN])


def flip_with_label(image, label):
    flipped = torch.flip(image, dims=[-1])
    if isinstance(label, torch.Tensor):
        return flipped, torch.tensor(_MIRROR)[label]
    return flipped, _MIRROR[label]
