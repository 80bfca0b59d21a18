"""CausalSelfAttention runs one head at a time and writes each head's output into a buffer
made with torch.zeros(B, T, C, device=x.device): the buffer takes the default dtype, so a float64 module's
heads are rounded to float32 on the way (and the output is float32)."""

EXPECT = r"float64|float32|dtype"
TASK = "ch10.4"
SELECT = "scale_on_other"


class CausalSelfAttention(CausalSelfAttention):
    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        D = C // H
        q, k, v = self.qkv(x).split(C, dim=2)
        merged = torch.zeros(B, T, C, device=x.device)
        for h in range(H):
            qh, kh, vh = (t[..., h * D : (h + 1) * D] for t in (q, k, v))
            scores = qh @ kh.transpose(-2, -1) / math.sqrt(D)
            scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))
            merged[..., h * D : (h + 1) * D] = scores.softmax(dim=-1) @ vh
        return self.proj(merged.to(x.dtype))
