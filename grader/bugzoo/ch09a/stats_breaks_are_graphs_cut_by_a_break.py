"""Graph breaks are the graphs of the first call that a break cut short (as explain's
break_reasons lists them): a graph ended by a break with no tensor op after it counts, while
the graph a nested break splits off inside a called function, which ends at that function's
return, does not, so the count differs from explain's graph_break_count."""

EXPECT = r"graph_breaks.*explain"
SELECT = "frames_are_not_graphs"
TASK = "ch09a.1"

EDITS = [
    (
        "    counting = CompileCounterWithBackend(backend)\n",
        "    cut_by_a_break = []\n"
        "\n"
        "    def noting(gm, example_inputs):  # was this graph compiled because of a break?\n"
        "        cut_by_a_break.append(bool(gm.compile_subgraph_reason.graph_break))\n"
        "        return torch._dynamo.lookup_backend(backend)(gm, example_inputs)\n"
        "\n"
        "    counting = CompileCounterWithBackend(noting)\n",
    ),
    (
        "            first_call_graphs = counting.frame_count  # the first call starts from nothing\n",
        "            first_call_graphs = sum(cut_by_a_break) + 1\n",
    ),
]
