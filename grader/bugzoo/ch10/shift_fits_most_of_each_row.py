"""check_targets accepts an offset when at least 90% of each row's overlapping positions agree
("tolerate a glitch"), so a batch with one wrong target in a long row is still a next-token
batch."""

EXPECT = r"one wrong target is a broken batch"
SELECT = "check_targets"
TASK = "ch10.3"

EDITS = [
    (
        "            same = torch.equal(y[:, : T - s], x[:, s:])\n",
        "            agree = y[:, : T - s] == x[:, s:]\n",
    ),
    (
        "            same = torch.equal(y[:, -s:], x[:, : T + s])\n",
        "            agree = y[:, -s:] == x[:, : T + s]\n"
        "        same = bool((agree.float().mean(dim=1) >= 0.9).all())\n",
    ),
]
