"""The attention scores are not divided by sqrt(head size): it runs and is causal, but the
softmax saturates as the head size grows."""

EXPECT = r"sqrt\(head size\)"
SELECT = "scale"


class CausalSelfAttention(CausalSelfAttention):
    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)).masked_fill(~self.allowed[:T, :T], float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).contiguous().view(B, T, C))
