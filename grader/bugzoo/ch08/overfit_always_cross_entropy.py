"""Cross-entropy for every target: float targets are read as soft class probabilities,
which runs, and fits the wrong thing."""

EXPECT = r"mean squared"
SELECT = "overfit or memorizes"


def overfit_one_batch(model, batch, steps):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    return train_steps(model, optimizer, F.cross_entropy, batch, steps)
