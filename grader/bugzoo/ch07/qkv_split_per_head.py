"""Splits the qkv projection into heads first and then into q, k, v per head, as if the
layout were [head0: q|k|v, head1: q|k|v, ...]; nn.Linear(E, 3E) here is [q | k | v]."""

EXPECT = r"q, k, v from qkv|order"
SELECT = "multiheadattention"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x):
        B, T, E = x.shape
        H = self.n_heads
        qkv = self.qkv(x).view(B, T, H, 3 * (E // H)).transpose(1, 2)
        q, k, v = qkv.chunk(3, dim=-1)
        mask = causal_mask(T, device=x.device) if self.causal else None
        w = attention_weights(q, k, mask)
        self.last_weights = w.detach()
        return self.proj(merge_heads(w @ v))
