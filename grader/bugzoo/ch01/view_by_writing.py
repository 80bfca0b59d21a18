"""Finds out by experiment: adds 1 to one tensor, watches whether the other moves, and
copies the old values back. Windows that share a storage but no element, and empty
views, look like copies; and every call writes into the caller's tensors."""

EXPECT = r"do not overlap|share no element|only read|version counter"
SELECT = "is_view_of"


def is_view_of(a, b):
    with torch.no_grad():
        try:
            kept, watched = a.clone(), b.clone()
            a.add_(1)
            moved = not torch.equal(b, watched)
            a.copy_(kept)
        except RuntimeError:  # an expanded tensor cannot be written: poke the other one
            kept, watched = b.clone(), a.clone()
            b.add_(1)
            moved = not torch.equal(a, watched)
            b.copy_(kept)
    return moved
