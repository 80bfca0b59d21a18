"""The residual is rewritten as x * (w - target / x), so the loss is x**2 * (w - target/x)**2
(x = 0, where the gradient is 0, handled apart). Algebraically the same, but target / x is
rounded to float32 before w is subtracted from it: near a fit at large values (x*w close to
target) that rounding is the size of the residual itself, and the gradient is off."""

EXPECT = r"rearranged before autograd"
SELECT = "gradient_at"
TASK = "ch00.1"
EDITS = [
    (
        "    loss = (float(x) * w_t - float(target)) ** 2\n",
        "    x, target = float(x), float(target)\n"
        "    if x == 0.0:\n"
        "        return 0.0\n"
        "    loss = x**2 * (w_t - target / x) ** 2\n",
    )
]
