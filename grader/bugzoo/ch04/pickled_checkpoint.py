"""save_checkpoint writes the checkpoint with pickle ("tensors pickle fine") and
load_checkpoint reads it with pickle: its own round trip works, but the file is not what
torch.save writes, and torch.load cannot read it. (Held-out round 14.)"""

EXPECT = r"torch\.load"
SELECT = "checkpoint"
TASK = "ch04.5"

EDITS = [
    (
        "    torch.save(\n"
        "        {\n"
        '            "model": model.state_dict(),\n'
        '            "optimizer": None if optimizer is None else optimizer.state_dict(),\n'
        '            "extra": extra,\n'
        "        },\n"
        "        path,\n"
        "    )\n",
        '    with open(path, "wb") as f:\n'
        "        pickle.dump(\n"
        "            {\n"
        '                "model": model.state_dict(),\n'
        '                "optimizer": None if optimizer is None else optimizer.state_dict(),\n'
        '                "extra": extra,\n'
        "            },\n"
        "            f,\n"
        "        )\n",
    ),
    (
        "    checkpoint = torch.load(Path(path), weights_only=True)\n",
        '    with open(Path(path), "rb") as f:\n        checkpoint = pickle.load(f)\n',
    ),
]

import pickle  # noqa: E402, F401 - used by the EDITS above
