"""A hand-made softmax: shift by the row max over all keys, exp, multiply by the mask and
renormalise. Equal on paper, but the disallowed keys still set the shift: a large future
score underflows the allowed ones, and earlier outputs change with later inputs."""

EXPECT = r"disallowed|mask"
SELECT = "weights or future or reach"


def attention_weights(q, k, mask=None):
    s = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    e = (s - s.amax(-1, keepdim=True)).exp()
    if mask is not None:
        e = e * mask
    return e / e.sum(-1, keepdim=True)
