"""The hinge as torch's multilabel-margin loss over two classes ([0, score] logits, the
label's class as the one target), doubled: the same values as max(0, 1 - y * score) in
float32 and float64 and nan kept, but multilabel_margin_loss has no CPU kernel for
float16 or bfloat16, so half-precision scores (a legal input) raise NotImplementedError."""

EXPECT = r"legal input.*no kernel for that dtype"
SELECT = "hinge_loss_random"
TASK = "ch06a.3"


def hinge_loss(scores, y, reduction="mean"):
    if scores.shape != y.shape:
        raise ValueError("hinge_loss: scores and labels differ in shape")
    if reduction not in ("none", "sum", "mean"):
        raise ValueError(f"hinge_loss: unknown reduction {reduction!r}")
    s = scores.reshape(-1)
    logits = torch.stack([torch.zeros_like(s), s], dim=1)  # (N, 2): class 1 scores s
    first = (y.reshape(-1) > 0).long()
    target = torch.stack([first, torch.full_like(first, -1)], dim=1)  # one target, then -1
    per = 2 * torch.nn.functional.multilabel_margin_loss(logits, target, reduction="none")
    losses = per.reshape(scores.shape)
    return {"none": losses, "sum": losses.sum(), "mean": losses.mean()}[reduction]
