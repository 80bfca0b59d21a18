"""The checkpoint holds only the model: Adam restarts with empty moments and step 0, so
training after a reload takes different steps."""

EXPECT = r"optimizer"
SELECT = "checkpoint"


def save_checkpoint(path, model, optimizer=None, **extra):
    path = Path(path)
    torch.save({"model": model.state_dict(), "extra": extra}, path)
    return path


def load_checkpoint(path, model, optimizer=None):
    checkpoint = torch.load(Path(path), weights_only=True)
    model.load_state_dict(checkpoint["model"])
    return dict(checkpoint["extra"])
