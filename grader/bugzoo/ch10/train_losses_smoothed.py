"""train_gpt records a smoothed training loss (an exponential moving average, 0.9 of the
previous entry and 0.1 of this step's loss), as a progress bar shows it: the first entry is
the true first loss and the curve still falls, but train_losses[k] is no longer step k's
loss."""

EXPECT = r"train_losses\[1\]|own training loss"
SELECT = "right_split"
TASK = "ch10.8"
EDITS = [
    (
        "        losses.append(loss.item())\n",
        "        losses.append(loss.item() if not losses else 0.9 * losses[-1] + 0.1 * loss.item())\n",
    )
]
