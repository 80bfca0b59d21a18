"""Float targets that are all 0 or 1 are read as binary labels and fitted with binary
cross-entropy on logits (held-out round 15): the contract fits float targets with mean
squared error whatever values they hold."""

EXPECT = r"never the values"
SELECT = "follows_adam"
TASK = "ch08.3"

EDITS = [
    (
        "    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy\n",
        """\
    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy
    if y.is_floating_point() and bool(((y == 0) | (y == 1)).all()):
        loss_fn = F.binary_cross_entropy_with_logits
""",
    ),
]
