"""The softmax runs over the query axis (dim=-2): with Tq == Tk the shape is right, but the
columns sum to 1 instead of the rows."""

EXPECT = r"last axis|over keys|over its keys"


def attention_weights(q, k, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-2)
