"""The attention weights used for the output are detached (as if last_weights and the
weights were the same tensor): the forward is right, but no gradient reaches q and k."""

EXPECT = r"graph"
SELECT = "gradients"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (split_heads(t, self.n_heads) for t in (q, k, v))
        mask = causal_mask(T, device=x.device) if self.causal else None
        self.last_weights = attention_weights(q, k, mask).detach()
        return self.proj(merge_heads(self.last_weights @ v))
