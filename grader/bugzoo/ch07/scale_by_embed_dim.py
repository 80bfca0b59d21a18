"""The module scales the scores by 1/sqrt(E), the full embedding size, instead of the
per-head dimension Dh."""

EXPECT = r"Dh|per-head"
SELECT = "MultiHead or multiheadattention or future or weights_of"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x):
        B, T, E = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (split_heads(t, self.n_heads) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(E)
        if self.causal:
            scores = scores.masked_fill(~causal_mask(T, device=x.device), float("-inf"))
        weights = scores.softmax(dim=-1)
        self.last_weights = weights.detach()
        return self.proj(merge_heads(weights @ v))
