"""step_report measures moved on float32 copies of the tensor and of ``before`` (a .float() to
compare like with like): a float64 tensor's largest change is then rounded to float32's 7
digits, not the change of any single entry."""

EXPECT = r"float64's precision"
SELECT = "step_report"
TASK = "ch03.6"
EDITS = [
    (
        "moved = (p.detach() - before[name].detach()).abs().max().item() if p.numel() else 0.0",
        "moved = (\n"
        "            (p.detach().float() - before[name].detach().float()).abs().max().item()\n"
        "            if p.numel()\n"
        "            else 0.0\n"
        "        )",
    )
]
