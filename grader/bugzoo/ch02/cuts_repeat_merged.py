"""find_graph_cuts drops a cut equal to the one reported just before it (the same op at
the same line), taking it for the same event seen twice: a loop whose body cuts once
reports its first pass only."""

EXPECT = r"more than once|loop"
SELECT = "find_graph_cuts"
TASK = "ch02.2"
EDITS = [
    (
        "                self.cuts.append(Cut(name, _user_location()))\n",
        "                cut = Cut(name, _user_location())\n"
        "                if not self.cuts or self.cuts[-1] != cut:\n"
        "                    self.cuts.append(cut)\n",
    )
]
