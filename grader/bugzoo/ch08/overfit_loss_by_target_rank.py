"""overfit_one_batch picks the loss from the targets' rank (held-out round 10,
loss_by_target_rank): [N] targets get cross-entropy, anything wider mean squared error, so
[N] real targets of a one-output regression are read as class probabilities."""

EXPECT = r"whatever\s+their shape"
SELECT = "follows_adam"
TASK = "ch08.3"

EDITS = [
    (
        "    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy\n",
        "    loss_fn = F.cross_entropy if y.dim() == 1 else F.mse_loss\n",
    ),
]
