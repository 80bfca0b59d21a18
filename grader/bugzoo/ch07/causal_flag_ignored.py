"""The module always applies the causal mask: causal=False is accepted and ignored, so a
bidirectional model still cannot see later positions."""

EXPECT = r"causal=False must apply no mask|no mask at all"
SELECT = "multiheadattention or bidirectional"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (split_heads(t, self.n_heads) for t in (q, k, v))
        weights = attention_weights(q, k, causal_mask(T, device=x.device))
        self.last_weights = weights.detach()
        return self.proj(merge_heads(weights @ v))
