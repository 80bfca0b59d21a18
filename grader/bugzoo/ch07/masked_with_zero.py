"""Disallowed scores are set to 0 instead of -inf: exp(0) is not 0, so masked keys still
get weight."""

EXPECT = r"-inf"


def attention_weights(q, k, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, 0.0)
    return scores.softmax(dim=-1)
