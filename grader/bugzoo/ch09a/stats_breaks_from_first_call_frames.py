"""Graph breaks are the frames the first call compiled, minus one (held-out round 15): an empty
resume frame after a break with no tensor op after it compiles without a graph, so a break at
the end of a function counts where explain counts none."""

EXPECT = r"graph_breaks.*explain"
SELECT = "frames_are_not_graphs"
TASK = "ch09a.1"

EDITS = [
    (
        "            first_call_graphs = counting.frame_count  # the first call starts from nothing\n",
        '            first_call_graphs = counters["frames"]["ok"] - frames_before\n',
    ),
]
