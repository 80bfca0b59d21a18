"""loss_constant judged on the losses gathered into a default (float32) tensor:
torch.tensor(losses) rounds each float64 loss of a float64 model to float32, so losses
1.5e-6 apart near 1000 become equal and the run is reported constant."""

EXPECT = r"float64 model: in float32"
SELECT = "loss_constant"
TASK = "ch08.2"

EDITS = [
    (
        "        if max(losses) - min(losses) <= 1e-6:\n",
        "        seen = torch.tensor(losses)  # float32\n"
        "        if float(seen.max() - seen.min()) <= 1e-6:\n",
    ),
]
