"""The mask becomes an additive bias made with torch.zeros(mask.shape, dtype=...) on the
default device: right on the CPU, but a CUDA batch meets a CPU bias and fails."""

EXPECT = r"meta device"
SELECT = "device"


def attention_weights(q, k, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=scores.dtype).masked_fill(~mask, float("-inf"))
        scores = scores + bias
    return scores.softmax(dim=-1)
