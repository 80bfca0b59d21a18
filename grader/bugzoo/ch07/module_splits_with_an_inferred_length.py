"""MultiHeadSelfAttention splits and merges heads itself with view(B, -1, H, Dh) and
reshape(B, -1, E), as many published modules do: on a batch of no examples the -1 cannot be
inferred from zero elements and forward raises."""

EXPECT = r"infer it from zero elements"
TASK = "ch07.6"


class MultiHeadSelfAttention(MultiHeadSelfAttention):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, E = x.shape
        H = self.n_heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, -1, H, E // H).transpose(1, 2) for t in (q, k, v))
        mask = causal_mask(T, device=x.device) if self.causal else None
        weights = attention_weights(q, k, mask)
        self.last_weights = weights.detach()
        return self.proj((weights @ v).transpose(1, 2).reshape(B, -1, E))
