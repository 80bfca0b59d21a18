"""A whole module written from the stub, the public tests and the reading alone, without
sight of the reference (to calibrate the similarity report, ``tests/test_similarity.py``):
every definition the student writes, in its own way (the given ones stay the solution's).
It passed every public and hidden test when it was written, and must keep passing them."""

import math
from collections.abc import Callable

import torch
from torch import Tensor


def make_xor_data(n: int, seed: int) -> XorData:
    """n points ~ N(0, I) in 2-D labelled (x0 > 0) xor (x1 > 0), split 80/20 at random.

    From a ``torch.Generator`` seeded with ``seed``: X = randn(n, 2), then perm = randperm(n);
    the first int(0.8 * n) indices of perm are the training set, the rest validation.
    """
    rng = torch.Generator().manual_seed(seed)
    points = torch.randn(n, 2, generator=rng)
    labels = torch.logical_xor(points[:, 0] > 0, points[:, 1] > 0).to(torch.int64)
    order = torch.randperm(n, generator=rng)
    n_train = int(0.8 * n)
    train_idx, val_idx = order[:n_train], order[n_train:]
    return XorData(points[train_idx], labels[train_idx], points[val_idx], labels[val_idx])


def _scaled_normal(fan_in: int, fan_out: int, generator: torch.Generator) -> Tensor:
    draw = torch.randn(fan_in, fan_out, generator=generator)
    return (draw / math.sqrt(fan_in)).requires_grad_()  # scale first: stays a leaf


def init_mlp(d_in: int, hidden: int, n_classes: int, generator: torch.Generator) -> Params:
    """Leaf tensors that require grad: W1 (d_in, hidden), b1 (hidden,), W2 (hidden, n_classes),
    b2 (n_classes,). W = randn(fan_in, fan_out) / sqrt(fan_in), drawn W1 then W2 from
    ``generator``; biases start at zero."""
    first = _scaled_normal(d_in, hidden, generator)
    second = _scaled_normal(hidden, n_classes, generator)
    return {
        "W1": first,
        "b1": torch.zeros(hidden, requires_grad=True),
        "W2": second,
        "b2": torch.zeros(n_classes, requires_grad=True),
    }


def mlp_forward(params: Params, X: Tensor) -> Tensor:
    """Logits (N, n_classes) of relu(X @ W1 + b1) @ W2 + b2 for X of shape (N, d_in)."""
    hidden = torch.relu(X @ params["W1"] + params["b1"])  # the nonlinearity XOR needs
    return hidden @ params["W2"] + params["b2"]  # (N, n_classes)


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean over the batch of -log softmax(logits)[i, targets[i]], as a 0-d tensor.

    logits (N, C) float, targets (N,) int64. Written by hand and numerically stable:
    logits of +-1000 give a finite loss equal to ``F.cross_entropy``.
    """
    # log sum_j exp(z_j) = peak + log sum_j exp(z_j - peak), peak = row max
    peak = logits.amax(dim=1, keepdim=True).detach()
    log_norm = peak.squeeze(1) + torch.exp(logits - peak).sum(dim=1).log()
    target_score = logits.gather(1, targets.long().unsqueeze(1)).squeeze(1)
    return (log_norm - target_score).mean()


def sgd_step(params: Params, lr: float) -> None:
    """In place, without recording the update: p -= lr * p.grad for every tensor whose grad
    is not None. The tensors stay the same leaf objects and their .grad is left as it is."""
    with torch.no_grad():
        for tensor in params.values():
            grad = tensor.grad
            if grad is None:
                continue
            tensor.sub_(lr * grad)


def step_report(before: Params, params: Params) -> list[StepRow]:
    """One ``StepRow`` per entry of ``params`` (same order), after backward and one update.

    ``before`` holds copies of the tensors taken before the update. grad_norm is the L2 norm
    of .grad (0.0 when it is None); finite: the tensor and its grad hold no inf/nan;
    moved: the largest absolute change of any single entry since ``before``.
    """
    rows = []
    for name, tensor in params.items():
        leaf = bool(tensor.is_leaf)
        # reading .grad of a non-leaf only warns; treat it as absent
        grad = tensor.grad if leaf else None  # a retained .grad included
        current = tensor.detach()
        if grad is None:
            norm = 0.0
            ok = bool(torch.isfinite(current).all())
        else:
            norm = float(torch.linalg.vector_norm(grad.detach().double()))
            ok = bool(torch.isfinite(current).all()) and bool(torch.isfinite(grad).all())
        delta = (current.double() - before[name].detach().double()).abs()
        shift = float(delta.max()) if delta.numel() else 0.0
        rows.append(StepRow(name, leaf, grad is None, norm, ok, shift))
    return rows


def train_mlp(
    data: XorData,
    hidden: int = 16,
    lr: float = 0.5,
    steps: int = 500,
    seed: int = 1,
    forward: Callable[[Params, Tensor], Tensor] | None = None,
) -> History:
    """Full-batch gradient descent on ``cross_entropy(forward(params, X_train), y_train)``.

    ``forward`` defaults to ``mlp_forward``. Parameters come from ``init_mlp(d_in, hidden,
    n_classes, Generator().manual_seed(seed))``; every step clears the gradients,
    backpropagates, and calls ``sgd_step``. Returns a ``History``.
    """
    model = forward if forward is not None else mlp_forward
    X_tr, y_tr, X_va, y_va = data
    n_in = X_tr.shape[1]
    n_out = int(max(int(y_tr.max()), int(y_va.max()) if y_va.numel() else 0)) + 1
    weights = init_mlp(n_in, hidden, n_out, torch.Generator().manual_seed(seed))

    losses: list[float] = []
    accs: list[float] = []
    for _ in range(steps):
        for t in weights.values():
            t.grad = None
        loss = cross_entropy(model(weights, X_tr), y_tr)
        loss.backward()
        sgd_step(weights, lr)
        losses.append(loss.item())
        accs.append(accuracy(weights, X_va, y_va, model))
    return History(weights, losses, accs)
