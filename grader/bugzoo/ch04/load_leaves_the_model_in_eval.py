"""After loading, the model is put in evaluation mode "to be safe": a model reloaded to
resume training stops updating its running statistics and its outputs change."""

EXPECT = r"evaluation mode"
SELECT = "checkpoint"


def load_checkpoint(path, model, optimizer=None):
    checkpoint = torch.load(Path(path), weights_only=True)
    model.load_state_dict(checkpoint["model"], strict=True)
    model.eval()
    if optimizer is not None:
        if checkpoint["optimizer"] is None:
            raise ValueError(f"{path} holds no optimizer state")
        optimizer.load_state_dict(checkpoint["optimizer"])
    return dict(checkpoint["extra"])
