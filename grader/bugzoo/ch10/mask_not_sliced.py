"""The causal mask buffer is used at its full block_size x block_size size: any sequence
shorter than block_size crashes with a shape mismatch."""

EXPECT = r"slice the mask"
SELECT = "attention_keeps or prefix or scale"


class CausalSelfAttention(CausalSelfAttention):
    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)
        scores = scores.masked_fill(~self.allowed, float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).contiguous().view(B, T, C))
