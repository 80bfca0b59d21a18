"""The mean is compared within tol * channel_std, but the std as a ratio to the expected
one, |std / channel_std - 1| <= tol: the same band wherever channel_std > 0, while a contract
channel that never varies (channel_std 0) gives 0 / 0 = nan and fits nothing."""

EXPECT = r"std 0|never varies|0 / 0"
TASK = "ch05a.2"


def _channel_order(mean, std, contract):
    want_mean = torch.tensor(contract.channel_mean)
    want_std = torch.tensor(contract.channel_std)
    if mean.shape != want_mean.shape:
        return None
    fits = ((mean[:, None] - want_mean).abs() <= contract.tol * want_std) & (
        (std[:, None] / want_std - 1).abs() <= contract.tol
    )

    def match(c, used):
        if c == len(mean):
            return []
        for k in fits[c].nonzero().flatten().tolist():
            rest = None if k in used else match(c + 1, used | {k})
            if rest is not None:
                return [k, *rest]
        return None

    return match(0, frozenset())
