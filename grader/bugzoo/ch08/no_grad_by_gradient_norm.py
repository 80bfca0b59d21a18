"""Reachability is judged by the size of the gradient: a parameter whose gradient norm,
summed over the steps, is 0 is reported as no_grad, so one that backward reaches with a
gradient of exact zeros (0 * p, behind a dead ReLU, fed zeros) is called unreachable."""

EXPECT = r"\.grad stayed None after every backward"
SELECT = "no_grad"
TASK = "ch08.2"

EDITS = [
    (
        "    got_grad: set[str] = set()\n",
        "    got_grad: set[str] = set()\n    grad_norm: dict[str, float] = {}\n",
    ),
    (
        "                got_grad.add(n)\n",
        "                got_grad.add(n)\n"
        "                grad_norm[n] = grad_norm.get(n, 0.0) + float(p.grad.double().norm())\n",
    ),
    (
        "            if p.requires_grad and n not in got_grad:\n",
        "            if p.requires_grad and grad_norm.get(n, 0.0) == 0.0:\n",
    ),
]
