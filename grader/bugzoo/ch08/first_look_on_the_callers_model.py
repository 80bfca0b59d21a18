"""diagnose takes a first look at the outputs on the caller's model, under no_grad, before
copying it: a BatchNorm layer in train mode updates the caller's running statistics."""

EXPECT = r"running_mean|BatchNorm"
SELECT = "callers_buffers"

EDITS = [
    (
        "    model, optimizer = copy.deepcopy((model, optimizer))",
        "    with torch.no_grad():\n"
        "        model(batch[0])\n"
        "    model, optimizer = copy.deepcopy((model, optimizer))",
    ),
]
