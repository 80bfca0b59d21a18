"""Stops the loop early once the loss is exactly 0: "for steps steps" becomes "until
nothing is left to learn", and the rows stop short."""

EXPECT = r"for `steps` steps|stopping early"
SELECT = "train_scalar or nothing_left"
EDITS = [
    (
        "        losses.append(loss.item())\n",
        "        losses.append(loss.item())\n        if loss.item() == 0.0:\n            break\n",
    )
]
