"""The tolerance is compared as a ratio: |m - mu| / s <= tol. A contract channel whose
expected std is 0 (a constant channel) then divides 0 by 0, and a batch that matches it
exactly is reported as a normalization violation."""

EXPECT = r"std 0|never varies|0 / 0"
TASK = "ch05a.2"


def _channel_order(mean, std, contract):
    want_mean = torch.tensor(contract.channel_mean)
    want_std = torch.tensor(contract.channel_std)
    if mean.shape != want_mean.shape:
        return None
    fits = ((mean[:, None] - want_mean).abs() / want_std <= contract.tol) & (
        (std[:, None] - want_std).abs() / want_std <= contract.tol
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
