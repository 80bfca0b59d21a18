"""Normalizer.apply works out the broadcast shape of the statistics on its first call and
keeps it on the Normalizer, so a later batch of another rank is broadcast wrongly."""

EXPECT = r"earlier call"
SELECT = "every_rank_in_turn"
EDITS = [
    (
        "        shape = (1, -1) + (1,) * (x.dim() - 2)  # broadcast over N and the trailing dims\n",
        '        if "_shape" not in vars(self):\n'
        '            object.__setattr__(self, "_shape", (1, -1) + (1,) * (x.dim() - 2))\n'
        "        shape = self._shape\n",
    )
]
