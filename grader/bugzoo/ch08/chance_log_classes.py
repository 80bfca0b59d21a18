"""at_chance compares with log(number of classes) instead of the entropy of the label
frequencies: with skewed labels a model that only learned the proportions looks fine."""

EXPECT = r"label frequencies|number of classes"
SELECT = "at_chance"

EDITS = [
    (
        "        chance = _label_entropy(y)\n",
        "        chance = math.log(outputs.shape[1])\n",
    ),
]
