"""cross_entropy takes log_softmax from torch's private special-function kernel, looked up
at call time under DisableTorchFunction: that spelling is not among those switched off and
the recorder is blind while function modes are disabled."""

EXPECT = r"as written.*torch\._C\._special\.special_log_softmax"
SELECT = "by_hand"


def cross_entropy(logits, targets):
    with torch._C.DisableTorchFunction():
        logp = torch._C._special.special_log_softmax(logits, 1)
    return -logp.gather(1, targets.long()[:, None]).mean()
