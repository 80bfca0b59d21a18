"""The mask is applied to the weights after the softmax: masked weights are 0, but the
normalizer still includes the future, so rows no longer sum to 1 and the future leaks."""

EXPECT = r"before the softmax|mask applied after softmax"


def attention_weights(q, k, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = scores.softmax(dim=-1)
    return weights if mask is None else weights * mask
