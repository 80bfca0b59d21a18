"""Only mechanical failures are checked; a run that is mechanically fine but learns
nothing (shuffled labels, probabilities fed to cross_entropy) gets no finding."""

EXPECT = r"at_chance|probabilit"
SELECT = "diagnose"

_solution_diagnose = diagnose


def diagnose(model, optimizer, loss_fn, batch, steps):
    found = _solution_diagnose(model, optimizer, loss_fn, batch, steps)
    return [f for f in found if f.code not in ("at_chance", "probabilities_as_logits")]
