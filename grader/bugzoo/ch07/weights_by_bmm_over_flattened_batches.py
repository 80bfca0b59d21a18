"""attention_weights flattens the leading axes to use torch.bmm, with reshape(-1, Tq, D):
with no queries (Tq == 0) the tensor has no elements, the -1 cannot be inferred and the
call raises, although [..., 0, Tk] weights are a legal answer."""

EXPECT = r"reshape\(-1, Tq, D\)"
TASK = "ch07.4"


def attention_weights(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    lead, (tq, d), tk = q.shape[:-2], q.shape[-2:], k.shape[-2]
    scores = torch.bmm(q.reshape(-1, tq, d), k.reshape(-1, tk, d).transpose(1, 2))
    scores = scores.reshape(*lead, tq, tk) / math.sqrt(d)  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1)
