"""cross_entropy picks the target from Tensor.log_softmax: the normalisation, the part the
task is about, is the library's."""

EXPECT = r"by hand"
SELECT = "cross_entropy"


def cross_entropy(logits, targets):
    return -logits.log_softmax(dim=1).gather(1, targets[:, None]).mean()
