"""Only the reversed channel order (RGB <-> BGR) is tried: any other permutation of the
channels is called a normalization problem."""

EXPECT = r"permut|channel order"
SELECT = "contract or channel or violation"


def _channel_order(mean, std, contract):
    want_mean = torch.tensor(contract.channel_mean)
    want_std = torch.tensor(contract.channel_std)
    if mean.shape != want_mean.shape:
        return None
    limit = contract.tol * want_std
    for order in (list(range(len(mean))), list(range(len(mean)))[::-1]):
        m, s = mean[order], std[order]
        if bool((((m - want_mean).abs() <= limit) & ((s - want_std).abs() <= limit)).all()):
            return order
    return None
