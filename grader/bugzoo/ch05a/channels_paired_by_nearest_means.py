"""Where the identity does not fit, channels are paired by the permutation whose means lie nearest the contract's (the least
total distance between batch and contract means, every permutation tried), and only that
pairing is checked on mean and std. Where the means are equal, close, or rank the other way,
the nearest means are not the channels' own, and a permuted batch is called a normalization
problem although another permutation fits on both statistics."""

import itertools

EXPECT = r"channel order|both statistics"
SELECT = "some_permutation_fits"
TASK = "ch05a.2"


def _channel_order(mean, std, contract):
    want_mean = torch.tensor(contract.channel_mean)
    want_std = torch.tensor(contract.channel_std)
    if mean.shape != want_mean.shape:
        return None
    limit = contract.tol * want_std
    fits = ((mean[:, None] - want_mean).abs() <= limit) & ((std[:, None] - want_std).abs() <= limit)
    if bool(fits.diagonal().all()):
        return list(range(len(mean)))
    distance = (mean[:, None] - want_mean).abs()
    best = min(
        itertools.permutations(range(len(mean))),
        key=lambda p: float(sum(distance[c, k] for c, k in enumerate(p))),
    )
    return list(best) if all(bool(fits[c, k]) for c, k in enumerate(best)) else None
