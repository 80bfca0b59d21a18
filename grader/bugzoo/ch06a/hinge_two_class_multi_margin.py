"""The hinge as torch's two-class multi-margin loss on [0, score] logits, doubled (held-out
round 9, valid_positions_only_multi_margin): right in float32 and float64, but torch has no
CPU kernel for multi_margin_loss in float16 or bfloat16, so a half-precision score tensor,
a legal input, raises NotImplementedError."""

EXPECT = r"legal input.*no kernel for that dtype"
SELECT = "hinge_loss_random"
TASK = "ch06a.3"


def hinge_loss(scores, y, reduction="mean"):
    if scores.shape != y.shape:
        raise ValueError("hinge_loss: scores and labels differ in shape")
    s = scores.reshape(-1)
    two = torch.stack([torch.zeros_like(s), s], dim=1)  # class 1 scores s, class 0 scores 0
    target = (y.reshape(-1) > 0).long()
    losses = 2 * torch.nn.functional.multi_margin_loss(two, target, reduction="none")
    losses = losses.reshape(scores.shape)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return losses.mean()
    raise ValueError(f"hinge_loss: unknown reduction {reduction!r}")
