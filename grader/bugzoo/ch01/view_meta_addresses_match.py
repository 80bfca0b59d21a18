"""Storages are told apart by their address wherever they hold bytes, also on the meta
device, where every storage has a size but no memory and reports address 0: any two meta
tensors come out as views of each other, a clone included (the reference of rounds 8 to
14)."""

EXPECT = r"meta device"
SELECT = "is_view_of"
TASK = "ch01.6"

EDITS = [
    (
        "    if not sa.nbytes() or a.is_meta:\n",
        "    if not sa.nbytes():\n",
    )
]
