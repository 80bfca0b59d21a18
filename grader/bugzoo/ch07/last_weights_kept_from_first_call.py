"""last_weights is set on the first forward only: later calls keep reporting the weights
of the first input."""

EXPECT = r"every forward|latest"
SELECT = "last_weights"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (split_heads(t, self.n_heads) for t in (q, k, v))
        mask = causal_mask(T, device=x.device) if self.causal else None
        weights = attention_weights(q, k, mask)
        if self.last_weights is None:
            self.last_weights = weights.detach()
        return self.proj(merge_heads(weights @ v))
