"""Loads with load_state_dict(..., assign=True): the model gets new parameter tensors, and
the optimizer passed in still holds the old ones, so it never updates the model again (the
invariants see the model's parameters replaced: a load may only set their values)."""

EXPECT = r"no longer holds|assign|replaced"
SELECT = "checkpoint"


def load_checkpoint(path, model, optimizer=None):
    checkpoint = torch.load(Path(path), weights_only=True)
    model.load_state_dict(checkpoint["model"], strict=True, assign=True)
    if optimizer is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
    return dict(checkpoint["extra"])
