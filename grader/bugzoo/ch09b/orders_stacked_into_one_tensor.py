"""make_run fingerprints the data order as one stacked (epochs, n) tensor of the epochs'
permutations: torch.stack of no permutations raises, so a run of zero epochs (a run that
only builds its model, e.g. to read its init fingerprint) fails."""

EXPECT = r"0 epochs.*no step"
TASK = "ch09b.2"

EDITS = [
    (
        "    return RunResult(losses, init_fingerprint, fingerprint(orders))",
        "    return RunResult(losses, init_fingerprint, fingerprint(torch.stack(orders)))",
    )
]
