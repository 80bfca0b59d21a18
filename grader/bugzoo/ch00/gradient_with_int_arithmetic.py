"""x and target meet the weight tensor as they came: a Python int becomes an int64 on the
way, so gradient_at(1, 2**70, 2**70) raises "int too big to convert" instead of returning
0.0 (the reference of rounds 8 to 14)."""

EXPECT = r"2\*\*63 or more"
SELECT = "gradient"
TASK = "ch00.1"

EDITS = [
    (
        "    loss = (float(x) * w_t - float(target)) ** 2\n",
        "    loss = (x * w_t - target) ** 2\n",
    )
]
