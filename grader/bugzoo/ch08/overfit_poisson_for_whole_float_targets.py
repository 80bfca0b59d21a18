"""Float targets that are all whole numbers are read as counts and fitted with a Poisson
negative log-likelihood (outputs as log-rates): the contract fits float targets with mean
squared error whatever values they hold."""

EXPECT = r"never the values"
SELECT = "follows_adam"
TASK = "ch08.3"

EDITS = [
    (
        "    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy\n",
        """\
    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy
    if y.is_floating_point() and bool((y == y.round()).all()) and bool((y >= 0).all()):
        loss_fn = F.poisson_nll_loss
""",
    ),
]
