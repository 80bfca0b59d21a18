"""Reachability is judged entry by entry: a parameter with an entry that never got a
nonzero gradient is reported as no_grad, so a layer whose outputs are partly gated off
(some rows of its gradient exactly zero) is called unreachable."""

EXPECT = r"\.grad stayed None after every backward"
SELECT = "no_grad"
TASK = "ch08.2"

EDITS = [
    (
        "    got_grad: set[str] = set()\n",
        "    got_grad: set[str] = set()\n    touched: dict[str, Tensor] = {}\n",
    ),
    (
        "                got_grad.add(n)\n",
        "                got_grad.add(n)\n"
        "                touched[n] = (p.grad != 0) | touched.get(n, torch.zeros_like(p, dtype=torch.bool))\n",
    ),
    (
        "            if p.requires_grad and n not in got_grad:\n",
        "            if p.requires_grad and not (n in touched and bool(touched[n].all())):\n",
    ),
]
