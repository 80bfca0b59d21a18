"""Loads with load_state_dict(..., assign=True): the model gets new parameter tensors, and
the optimizer passed in still holds the old ones, so it never updates the model again."""

EXPECT = r"no longer holds|assign"
SELECT = "checkpoint"


def load_checkpoint(path, model, optimizer=None):
    checkpoint = torch.load(Path(path), weights_only=True)
    model.load_state_dict(checkpoint["model"], strict=True, assign=True)
    if optimizer is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
    return dict(checkpoint["extra"])
