"""Averages the one-hot weighted log-probabilities over all N x C entries instead of over
the N examples: the loss is C times too small."""

EXPECT = r"average|mean|batch"
SELECT = "cross_entropy"


def cross_entropy(logits, targets):
    z = logits - logits.max(dim=1, keepdim=True).values
    logp = z - z.exp().sum(dim=1, keepdim=True).log()
    onehot = torch.nn.functional.one_hot(targets, logits.shape[1]).to(logits.dtype)
    return -(onehot * logp).mean()
