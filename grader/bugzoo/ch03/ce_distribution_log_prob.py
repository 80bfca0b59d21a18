"""cross_entropy is the negative log-probability of a Categorical built from the logits:
the distribution normalises the logits (a log-softmax of its own, from logsumexp), so the
part the task is about is the library's, though no loss function is called."""

EXPECT = r"as written.*torch\.distributions"
SELECT = "by_hand"


def cross_entropy(logits, targets):
    dist = torch.distributions.Categorical(logits=logits, validate_args=False)
    return -dist.log_prob(targets).mean()
