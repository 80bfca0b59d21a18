"""The checkpoint is one flat dict, the extras first and the states written over them as
"model_state" and "optimizer_state": the model always loads, but an extra of either name
is overwritten in the file and never comes back."""

EXPECT = r"checkpoint's own entries"
SELECT = "checkpoint_lives_in_the_file"


def save_checkpoint(path, model, optimizer=None, **extra):
    path = Path(path)
    payload = dict(extra)
    payload["model_state"] = model.state_dict()
    if optimizer is not None:
        payload["optimizer_state"] = optimizer.state_dict()
    torch.save(payload, path)
    return path


def load_checkpoint(path, model, optimizer=None):
    checkpoint = torch.load(Path(path), weights_only=True)
    model.load_state_dict(checkpoint.pop("model_state"), strict=True)
    state = checkpoint.pop("optimizer_state", None)
    if optimizer is not None:
        if state is None:
            raise ValueError(f"{path} holds no optimizer state")
        optimizer.load_state_dict(state)
    return checkpoint
