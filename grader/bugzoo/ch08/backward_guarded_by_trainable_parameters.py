"""Backward is guarded by whether any parameter of the model requires grad, not by whether
the loss has a graph (held-out round 15): a model with trainable parameters whose forward
detaches its output makes diagnose raise instead of reporting no_grad for them."""

EXPECT = r"without a graph"
SELECT = "no_grad_means"
TASK = "ch08.2"

EDITS = [
    (
        "        if loss.requires_grad:  # with everything frozen there is nothing to backpropagate\n",
        "        if any(p.requires_grad for p in model.parameters()):  # everything frozen: no graph\n",
    ),
]
