"""Held-out round 12 answer (offered as correct): the label entropy is
torch.distributions.Categorical(probs).entropy() in float64, a fine entropy, but Categorical
clamps probabilities away from 1, so one distinct label gives ~2.2e-16 instead of 0 and the
reference's 'chance > 0' guard no longer stands for 'at least two distinct labels':
at_chance is reported on a batch of one label."""

EXPECT = r"single distinct label"
SELECT = "at_chance_at_its_threshold"
TASK = "ch08.2"

EDITS = [
    (
        "    p = torch.bincount(y.flatten()).float()\n"
        "    p = p[p > 0] / p.sum()\n"
        "    return float(-(p * p.log()).sum())\n",
        "    counts = torch.bincount(y.flatten()).double()\n"
        "    return float(torch.distributions.Categorical(probs=counts / counts.sum()).entropy())\n",
    )
]
