"""Plain subgradient descent with a step that decays linearly to 0 (round-10 held-out
answer): fine at C = 1, but the step is scaled by the learning rate alone, so with a large C
and data off the origin it overshoots and ends several times above the minimum."""

EXPECT = r"size of the subgradient"
SELECT = "svm"
TASK = "ch06a.4"

EDITS = [
    (
        "        for p, g, mp, vp in zip((w, b), grads, m, v):\n"
        "            mp.mul_(beta1).add_(g, alpha=1 - beta1)\n"
        "            vp.mul_(beta2).addcmul_(g, g, value=1 - beta2)\n"
        "            p -= step * (mp / (1 - beta1**k)) / ((vp / (1 - beta2**k)).sqrt() + 1e-8)\n",
        "        for p, g in zip((w, b), grads):\n"
        "            p -= step * g  # subgradient descent with a decaying step\n",
    )
]
