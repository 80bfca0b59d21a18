"""The scores are divided by sqrt(n_embd) instead of sqrt(n_embd / n_head): right only
with a single head."""

EXPECT = r"sqrt\(head size\)|1/sqrt"
SELECT = "scale"


class CausalSelfAttention(CausalSelfAttention):
    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C)
        scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).contiguous().view(B, T, C))
