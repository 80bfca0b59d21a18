"""The running statistics are left alone under torch.inference_mode() ("inference means
evaluating"), so a training-mode pass run there normalises with the batch and forgets it.
Inference mode, like no_grad, only stops autograd from recording; a module in training mode
still updates its statistics there (nn.BatchNorm1d does)."""

EXPECT = r"whatever the grad mode"
SELECT = "running_norm"
TASK = "ch04.4"

EDITS = [
    (
        "            with torch.no_grad():  # statistics are bookkeeping, not part of the graph\n",
        "            if not torch.is_inference_mode_enabled():  # inference: nothing to learn\n"
        "              with torch.no_grad():\n",
    )
]
