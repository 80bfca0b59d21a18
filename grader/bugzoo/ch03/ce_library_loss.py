"""cross_entropy hands the work to F.cross_entropy: right values and gradients, nothing
written by hand."""

EXPECT = r"by hand"
SELECT = "cross_entropy"


def cross_entropy(logits, targets):
    return torch.nn.functional.cross_entropy(logits, targets)
