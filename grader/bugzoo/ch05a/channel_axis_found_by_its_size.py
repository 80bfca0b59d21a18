"""When dim 1 fits in no order, the channels are looked for on the other axis that has as many
entries as the contract has channels (the last one first), and a fit there is a channel order
violation: a batch whose channels sit on dim 2 (N, H, C, W) is reported as channels in the wrong
place, though the contract's channel order is a permutation of dim 1 or channels stored last,
and everything else that does not fit is a normalization violation."""

EXPECT = r"normalization|channel order"
TASK = "ch05a.2"

EDITS = [
    (
        "    elif x.dim() == 4 and _channel_order(*_channel_stats(x, 3), contract) is not None:\n",
        "    elif any(\n"
        "        _channel_order(*_channel_stats(x, d), contract) is not None\n"
        "        for d in [d for d in range(x.dim() - 1, 1, -1) if x.shape[d] == len(contract.channel_mean)][:1]\n"
        "    ):\n",
    )
]
