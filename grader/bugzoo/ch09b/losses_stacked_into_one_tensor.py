"""make_run keeps each step's loss as a detached tensor and turns them into floats at the
end with torch.stack(...).tolist(): a run with no steps (zero epochs) raises instead of
returning no losses."""

EXPECT = r"0 epochs.*no step"
TASK = "ch09b.2"

EDITS = [
    ("            losses.append(loss.item())", "            losses.append(loss.detach())"),
    (
        "    return RunResult(losses, init_fingerprint, fingerprint(orders))",
        "    losses = torch.stack(losses).tolist()\n"
        "    return RunResult(losses, init_fingerprint, fingerprint(orders))",
    ),
]
