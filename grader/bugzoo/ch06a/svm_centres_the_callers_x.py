"""Centres the features in place to train on better-conditioned data, then moves the
bias back: the answer is right, but a float64 X (which .to(float64) does not copy) is
changed for the caller."""

EXPECT = r"modified|in place|left unchanged|changed its argument `X`"
SELECT = "svm"
EDITS = [
    (
        "    X = X.to(torch.float64)\n",
        "    X = X.to(torch.float64)\n    centre = X.mean(0)\n    X -= centre\n",
    ),
    (
        "    return w.to(torch.float32), float(b)\n",
        "    return w.to(torch.float32), float(b - centre @ w)\n",
    ),
]
