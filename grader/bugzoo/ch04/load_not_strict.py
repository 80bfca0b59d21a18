"""load_checkpoint loads with strict=False, so a checkpoint missing a block loads
'successfully' and the block keeps its random weights."""

EXPECT = r"strict"
SELECT = "checkpoint"


def load_checkpoint(path, model, optimizer=None):
    checkpoint = torch.load(Path(path), weights_only=True)
    model.load_state_dict(checkpoint["model"], strict=False)
    if optimizer is not None and checkpoint["optimizer"] is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
    return dict(checkpoint["extra"])
