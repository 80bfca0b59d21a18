"""``train_scalar`` keeps w as a one-element vector, clears the gradient (``grad = None``) at
the start of each step instead of zeroing it after the update, scores with ``F.mse_loss``,
records with ``float()`` after the backward pass and updates with ``add_(alpha=-lr)``. Every
row still pairs the w that made the prediction with that prediction's loss."""

import torch
import torch.nn.functional as F


def train_scalar(
    xs: list[float], targets: list[float], w0: float, lr: float, steps: int
) -> TrainResult:
    """Fit y = w*x by mean squared error with plain gradient descent for ``steps`` steps.

    The update happens under ``torch.no_grad()`` and the gradient is zeroed every step.
    Row k of (ws, losses) is one coherent state: the w used for prediction k and its loss.
    """
    inputs = torch.tensor([float(v) for v in xs])
    wanted = torch.tensor([float(v) for v in targets])
    weight = torch.full((1,), float(w0), requires_grad=True)
    history_w: list[float] = []
    history_loss: list[float] = []
    for _step in range(steps):
        weight.grad = None  # nothing left over from the previous step
        loss = F.mse_loss(inputs * weight, wanted)
        loss.backward()
        history_w.append(float(weight.detach()))  # still the weight that made this prediction
        history_loss.append(float(loss))
        with torch.no_grad():
            weight.add_(weight.grad, alpha=-lr)
    return TrainResult(float(weight.detach()), history_w, history_loss)
