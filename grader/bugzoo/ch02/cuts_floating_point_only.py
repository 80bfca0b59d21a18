"""find_graph_cuts decides whether a tensor result holds real numbers by is_floating_point()
alone: a complex result (torch.complex under no_grad, a detached complex tensor) carries values a
gradient flows through just as well, but its cut goes unreported."""

EXPECT = r"complex"
SELECT = "generated_programs"
TASK = "ch02.2"
EDITS = [
    (
        "        return obj.is_floating_point() or obj.is_complex()\n",
        "        return obj.is_floating_point()\n",
    )
]
