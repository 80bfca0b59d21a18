"""The contract's tol is used as an absolute distance instead of a number of each channel's
expected std: with stds of 0.1, means a whole std away still 'fit'."""

EXPECT = r"tol \* channel_std|units|tolerance"
SELECT = "contract or tol or violation or channel"


def _channel_order(mean, std, contract):
    want_mean = torch.tensor(contract.channel_mean)
    want_std = torch.tensor(contract.channel_std)
    if mean.shape != want_mean.shape:
        return None
    limit = contract.tol
    fits = ((mean[:, None] - want_mean).abs() <= limit) & ((std[:, None] - want_std).abs() <= limit)

    def match(c, used):
        if c == len(mean):
            return []
        for k in fits[c].nonzero().flatten().tolist():
            rest = None if k in used else match(c + 1, used | {k})
            if rest is not None:
                return [k, *rest]
        return None

    return match(0, frozenset())
