"""find_graph_cuts keeps one report per (op, location): a detach inside a loop that runs
three times gives one cut instead of three (held-out round 11)."""

EXPECT = r"more than once|loop"
SELECT = "find_graph_cuts"
TASK = "ch02.2"
EDITS = [
    (
        "                self.cuts.append(Cut(name, _user_location()))\n",
        "                cut = Cut(name, _user_location())\n"
        "                if cut not in self.cuts:\n"
        "                    self.cuts.append(cut)\n",
    )
]
