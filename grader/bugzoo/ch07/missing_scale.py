"""The scores are not divided by sqrt(D): softmax saturates and the weights differ from
PyTorch's."""

EXPECT = r"sqrt"


def attention_weights(q, k, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1)
