"""The mask is applied after the softmax (future weights zeroed, not renormalised): the
future scores still sit in every row's denominator, so earlier outputs depend on later inputs."""

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
        weights = (q @ k.transpose(-2, -1) / math.sqrt(C // H)).softmax(dim=-1)
        weights = weights.masked_fill(~self.allowed[:T, :T], 0.0)
        out = weights @ v
        return self.proj(out.transpose(1, 2).contiguous().view(B, T, C))
