"""Cross-entropy as -log(exp(z_t) / sum exp(z)) with no shift: exp(1000) overflows to inf."""

EXPECT = r"overflow|stable"
SELECT = "cross_entropy"


def cross_entropy(logits, targets):
    e = torch.exp(logits)
    p = e / e.sum(dim=1, keepdim=True)
    return -torch.log(p[torch.arange(len(targets)), targets]).mean()
