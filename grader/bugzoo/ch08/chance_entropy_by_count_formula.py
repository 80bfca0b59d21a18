"""The label entropy as log N - sum(c log c) / N over the label counts c (float64): right to a
rounding error, but for one distinct label that error is not always 0 (N = 23 or 39 gives
+4.4e-16), so a 'chance > 0' guard for 'at least two distinct labels' lets at_chance through
on some batches of one label."""

EXPECT = r"single distinct label"
SELECT = "at_chance_at_its_threshold"
TASK = "ch08.2"

EDITS = [
    (
        "    p = torch.bincount(y.flatten()).float()\n"
        "    p = p[p > 0] / p.sum()\n"
        "    return float(-(p * p.log()).sum())\n",
        "    c = torch.bincount(y.flatten()).double()\n"
        "    c = c[c > 0]\n"
        "    n = float(c.sum())\n"
        "    return math.log(n) - float((c * c.log()).sum()) / n\n",
    )
]
