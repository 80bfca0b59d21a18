"""step_report pairs ``before`` with ``params`` by position instead of by name: right while
both dicts list the tensors in the same order, wrong (or a shape error) otherwise."""

EXPECT = r"by name|not by position"
SELECT = "step_report"
EDITS = [
    (
        "    for name, p in params.items():\n",
        "    olds = list(before.values())\n    for k, (name, p) in enumerate(params.items()):\n",
    ),
    ("(p.detach() - before[name].detach())", "(p.detach() - olds[k].detach())"),
]
