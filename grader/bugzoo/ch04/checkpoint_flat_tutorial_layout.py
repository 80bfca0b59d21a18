"""The checkpoint is one flat dict in the tutorials' layout, {"model_state_dict": ...,
"optimizer_state_dict": ..., **extra}, and load_checkpoint returns what is left after
taking the two states out: an extra named model_state_dict (or optimizer_state_dict)
replaces that state in the file."""

EXPECT = r"checkpoint's own entries"
SELECT = "checkpoint_lives_in_the_file"


def save_checkpoint(path, model, optimizer=None, **extra):
    path = Path(path)
    payload = {
        "model_state_dict": model.state_dict(),
        "optimizer_state_dict": None if optimizer is None else optimizer.state_dict(),
        **extra,
    }
    torch.save(payload, path)
    return path


def load_checkpoint(path, model, optimizer=None):
    checkpoint = torch.load(Path(path), weights_only=True)
    model.load_state_dict(checkpoint.pop("model_state_dict"), strict=True)
    state = checkpoint.pop("optimizer_state_dict")
    if optimizer is not None:
        if state is None:
            raise ValueError(f"{path} holds no optimizer state")
        optimizer.load_state_dict(state)
    return checkpoint
