"""diagnose "starts clean" by zeroing the caller's gradients before it copies: the caller's
.grad is gone after a diagnosis (set_to_none)."""

EXPECT = r"\.grad was cleared"
SELECT = "used_caller"

EDITS = [
    (
        "    model, optimizer = copy.deepcopy((model, optimizer))",
        "    optimizer.zero_grad()\n    model, optimizer = copy.deepcopy((model, optimizer))",
    )
]
