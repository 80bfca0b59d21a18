"""The log-softmax normalises over the batch axis (dim=0) instead of the classes; with
N == C the shapes still line up."""

EXPECT = r"class axis|dim=1"
SELECT = "cross_entropy"


def cross_entropy(logits, targets):
    logp = logits - torch.logsumexp(logits, dim=0, keepdim=True)
    return -logp[torch.arange(len(targets)), targets].mean()
