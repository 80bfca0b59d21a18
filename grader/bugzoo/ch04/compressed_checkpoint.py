"""save_checkpoint compresses what torch.save writes (torch.save into a buffer, gzip the
bytes, write them) to keep checkpoints small, and load_checkpoint decompresses before
torch.load: its own round trip works, but the file at ``path`` is a gzip archive that
torch.load cannot read, not the file torch.save writes."""

EXPECT = r"torch\.load"
SELECT = "checkpoint"
TASK = "ch04.5"


def save_checkpoint(path, model, optimizer=None, **extra):
    path = Path(path)
    buffer = io.BytesIO()
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": None if optimizer is None else optimizer.state_dict(),
            "extra": extra,
        },
        buffer,
    )
    path.write_bytes(gzip.compress(buffer.getvalue()))
    return path


def load_checkpoint(path, model, optimizer=None):
    raw = gzip.decompress(Path(path).read_bytes())
    checkpoint = torch.load(io.BytesIO(raw), weights_only=True)
    model.load_state_dict(checkpoint["model"], strict=True)
    if optimizer is not None:
        if checkpoint["optimizer"] is None:
            raise ValueError(f"{path} holds no optimizer state")
        optimizer.load_state_dict(checkpoint["optimizer"])
    return dict(checkpoint["extra"])


import gzip  # noqa: E402
import io  # noqa: E402
