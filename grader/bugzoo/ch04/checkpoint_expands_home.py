"""Expands a leading '~' to the home folder, the shell's habit: a relative path through a
folder named '~' is written in (and read from) $HOME instead."""

EXPECT = r"exactly as given|expanduser"
SELECT = "checkpoint"
EDITS = [
    (
        "    path = Path(path)\n    torch.save(\n",
        "    path = Path(path).expanduser()\n    torch.save(\n",
    ),
    (
        "checkpoint = torch.load(Path(path), weights_only=True)",
        "checkpoint = torch.load(Path(path).expanduser(), weights_only=True)",
    ),
]
