"""The scores are scaled by 1/sqrt(Tk), the number of keys, instead of 1/sqrt(D): the same
whenever the sequence length equals the head size."""

EXPECT = r"sqrt\(D\)|q\.shape\[-1\]"
SELECT = "weights or attention"


def attention_weights(q, k, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1)
