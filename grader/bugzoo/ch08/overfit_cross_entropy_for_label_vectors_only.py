"""overfit_one_batch uses cross-entropy only for a vector of class ids ([N] integer targets)
and mean squared error for everything else: labels per position ([N, L], with [N, C, L]
scores) are regressed as numbers, although they are integer targets all the same."""

EXPECT = r"whatever\s+their shape"
SELECT = "follows_adam"
TASK = "ch08.3"

EDITS = [
    (
        "    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy\n",
        "    loss_fn = F.cross_entropy if y.dim() == 1 and not y.is_floating_point() else F.mse_loss\n",
    ),
]
