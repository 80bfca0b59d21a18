"""Saves to path.with_suffix('.pt') when the path has none, and returns the path it was
given: the file is not where the caller will look for it."""

EXPECT = r"exactly the path|writes only where told"
SELECT = "checkpoint"
EDITS = [
    (
        "    path = Path(path)\n    torch.save(\n",
        "    path = Path(path)\n    target = path if path.suffix else path.with_suffix('.pt')\n    torch.save(\n",
    ),
    ("        path,\n    )\n    return path\n", "        target,\n    )\n    return path\n"),
]
