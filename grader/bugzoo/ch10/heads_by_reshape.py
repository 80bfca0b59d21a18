"""Heads are split with reshape(B, H, T, Dh) but merged with transpose: a 'head row' holds
pieces of other positions, so the causal mask no longer lines up with time."""

EXPECT = r"future|prefix"
SELECT = "attention or block or gpt_never or square"


class CausalSelfAttention(CausalSelfAttention):
    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.reshape(B, H, T, C // H) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)
        scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).contiguous().view(B, T, C))
