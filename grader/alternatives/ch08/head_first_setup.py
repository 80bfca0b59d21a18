"""The head is swapped before the features are frozen (with one ``Module.requires_grad_``), the
SGD optimizer gets a param-group dict over ``model.head.parameters()``, and ``overfit_one_batch``
runs its own loop with loss modules and Adam over all parameters (frozen ones keep ``.grad`` None,
so Adam never touches them).
The optimizer holds exactly the new head, and the training and returned losses are unchanged.
"""

import torch
from torch import nn


def build_transfer_setup(model: TransferNet) -> tuple[TransferNet, torch.optim.Optimizer]:
    """Fresh head first, then freeze the features, then an optimizer over the head only."""
    old = model.head
    model.head = nn.Linear(
        old.in_features,
        old.out_features,
        bias=old.bias is not None,
        device=old.weight.device,
        dtype=old.weight.dtype,
    )
    model.features.requires_grad_(False)
    optimizer = torch.optim.SGD([{"params": list(model.head.parameters())}], lr=0.1)
    return model, optimizer


def overfit_one_batch(model: nn.Module, batch: tuple[Tensor, Tensor], steps: int) -> list[float]:
    """Full-batch Adam (lr 1e-2) on one batch; the loss of every step before its update."""
    inputs, targets = batch
    criterion = nn.MSELoss() if torch.is_floating_point(targets) else nn.CrossEntropyLoss()
    if not torch.is_floating_point(targets):
        targets = targets.to(torch.int64)  # class indices of any integer width
    adam = torch.optim.Adam(model.parameters(), lr=1e-2)
    history: list[float] = []
    for _ in range(steps):
        adam.zero_grad(set_to_none=True)
        loss = criterion(model(inputs), targets)
        loss.backward()
        history.append(float(loss.detach()))
        adam.step()
    return history
