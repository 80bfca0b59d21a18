"""A stable softmax (shifted by the row max), then log of the picked probability: the
softmax underflows to exactly 0 for a target far below the max, and log(0) = -inf."""

EXPECT = r"log\(0\)|log space"
SELECT = "cross_entropy"


def cross_entropy(logits, targets):
    z = logits - logits.max(dim=1, keepdim=True).values
    p = z.exp() / z.exp().sum(dim=1, keepdim=True)
    return -torch.log(p.gather(1, targets[:, None])).mean()
