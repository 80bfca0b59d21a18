"""torch.tensor(w, requires_grad=True) of an int w is an int64 tensor, which cannot require
grad: the contract's numbers include ints, and they crash."""

EXPECT = r"ints included|float\(w\)"
SELECT = "gradient"
EDITS = [
    (
        "    w_t = torch.tensor(float(w), requires_grad=True)\n",
        "    w_t = torch.tensor(w, requires_grad=True)\n",
    )
]
