"""Held-out round 9: channels are paired by the rank of their means (the i-th smallest batch
mean with the i-th smallest contract mean) and that one pairing is checked. Where the
contract means are equal or close, or rank the other way than the batch's, and only the stds
(or mean and std together) tell the channels apart, a permuted batch is called a
normalization problem."""

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
    order = [0] * len(mean)
    for c, k in zip(mean.argsort().tolist(), want_mean.argsort().tolist()):
        order[c] = k
    return order if all(bool(fits[c, order[c]]) for c in range(len(mean))) else None
