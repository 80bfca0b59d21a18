"""The repaired gate keeps the positive part when the batch's mean is exactly 0: `>=` where
the broken program's `if` (and the docstring) say `>`."""

EXPECT = r"exactly 0"
SELECT = "exactly_zero"

EDITS = [("h.mean() > 0, torch.relu(h)", "h.mean() >= 0, torch.relu(h)")]
