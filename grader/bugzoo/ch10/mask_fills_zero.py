"""Masked scores are set to 0 instead of -inf: exp(0) = 1, so future positions still get
attention weight after the softmax."""

EXPECT = r"future"
SELECT = "attention or block or gpt_never or square"


class CausalSelfAttention(CausalSelfAttention):
    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, H, C // H).transpose(1, 2)
        k = k.view(B, T, H, C // H).transpose(1, 2)
        v = v.view(B, T, H, C // H).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)
        scores = scores.masked_fill(~self.allowed[:T, :T], 0.0)
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).contiguous().view(B, T, C))
