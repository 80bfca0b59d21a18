"""The query is scaled in place (q /= sqrt(D)): the weights are right once, but the
caller's q is changed and autograd refuses a leaf or a view modified in place."""

EXPECT = r"changed their inputs|in-place|inplace"
SELECT = "inputs or gradients"


def attention_weights(q, k, mask=None):
    q /= math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1)
