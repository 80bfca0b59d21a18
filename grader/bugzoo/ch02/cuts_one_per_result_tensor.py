"""find_graph_cuts flattens what an op returned and records one Cut for every real-valued
tensor among the results that no longer requires grad, so a single call such as
torch.var_mean or aminmax under no_grad (two floating tensors) is reported twice: it
counts the values that left the graph, not the operations that cut it."""

EXPECT = r"one cut, however many tensors"
SELECT = "generated_programs"
TASK = "ch02.2"
EDITS = [
    (
        "                self.cuts.append(Cut(name, _user_location()))\n",
        "                location = _user_location()\n"
        "                leaves, _ = tree_flatten(out)\n"
        "                floating = [o for o in leaves if isinstance(o, Tensor) and _carries_values(o)]\n"
        "                self.cuts.extend(Cut(name, location) for _ in floating or [out])\n",
    )
]
