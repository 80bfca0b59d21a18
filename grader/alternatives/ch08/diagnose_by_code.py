"""``diagnose`` returns its findings grouped in ``CODES`` order (not per parameter), one
``not_in_model`` finding per foreign tensor, label entropy from ``torch.unique``, a probability-row
check on every step's output with a dtype-aware rounding tolerance, and clears all of the copy's
gradients (not only the optimizer's) before each step.
Every code still means exactly what the contract states, under the same conditions.
"""

import copy
import math

import torch
from torch import Tensor, nn


def _entropy_of_labels(y: Tensor) -> float:
    _, counts = torch.unique(y, return_counts=True)
    freq = counts.double() / counts.sum()
    return float(-(freq * freq.log()).sum())


def _looks_like_probabilities(out: Tensor) -> bool:
    if out.numel() == 0 or (out < 0).any():
        return False
    tol = max(1e-5, out.shape[1] * torch.finfo(out.dtype).eps)
    return bool(((out.sum(dim=1) - 1).abs() <= tol).all())


def diagnose(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFn,
    batch: tuple[Tensor, Tensor],
    steps: int,
) -> list[Finding]:
    """See the contract; findings are returned grouped by code, in ``CODES`` order."""
    model, optimizer = copy.deepcopy((model, optimizer))
    params = list(model.named_parameters())
    owned = {id(p) for _, p in params}
    held: dict[int, Tensor] = {}
    for group in optimizer.param_groups:
        for t in group["params"]:
            held[id(t)] = t

    found: dict[str, list[Finding]] = {code: [] for code in CODES}
    for name, p in params:
        if p.requires_grad and id(p) not in held:
            found["not_in_optimizer"].append(
                Finding("not_in_optimizer", name, "requires grad; no optimizer group holds it")
            )
        elif not p.requires_grad and id(p) in held:
            found["frozen"].append(
                Finding("frozen", name, "held by the optimizer although requires_grad is False")
            )
    for i, t in enumerate(t for key, t in held.items() if key not in owned):
        found["not_in_model"].append(
            Finding(
                "not_in_model",
                "optimizer",
                f"optimizer tensor #{i} of shape {tuple(t.shape)} is not a parameter of the model",
            )
        )

    x, y = batch
    start = {name: p.detach().clone() for name, p in params}
    losses: list[float] = []
    reached: set[str] = set()
    grad_nonzero: set[str] = set()
    bad: dict[str, str] = {}
    prob_rows = False
    is_class = not torch.is_floating_point(y)
    for step in range(steps):
        model.zero_grad(set_to_none=True)
        optimizer.zero_grad()
        out = model(x)
        if is_class and out.dim() == 2 and out.shape[1] >= 2 and not prob_rows:
            prob_rows = _looks_like_probabilities(out.detach())
        loss = loss_fn(out, y)
        value = float(loss.detach())
        losses.append(value)
        if not math.isfinite(value) and "loss" not in bad:
            bad["loss"] = f"step {step} produced a loss of {value}"
        if loss.requires_grad:
            loss.backward()
        for name, p in params:
            g = p.grad
            if g is None:
                continue
            reached.add(name)
            if not bool(torch.isfinite(g).all()):
                bad.setdefault(name, f"non-finite gradient at step {step}")
            elif bool(g.ne(0).any()):
                grad_nonzero.add(name)
        optimizer.step()
        for name, p in params:
            if name not in bad and not bool(torch.isfinite(p.detach()).all()):
                bad[name] = f"non-finite values after step {step}"

    if steps > 0:
        for name, p in params:
            if p.requires_grad and name not in reached:
                found["no_grad"].append(Finding("no_grad", name, "its .grad was None every step"))
        found["nonfinite"] = [Finding("nonfinite", w, d) for w, d in bad.items()]
        for name, p in params:
            if name in reached and id(p) in held and torch.equal(p.detach(), start[name]):
                reason = "nonzero" if name in grad_nonzero else "only all-zero"
                found["not_moving"].append(
                    Finding(
                        "not_moving", name, f"unchanged after {steps} steps with {reason} grads"
                    )
                )
    finite = [v for v in losses if math.isfinite(v)]
    if len(losses) >= 2 and len(finite) == len(losses) and max(losses) - min(losses) <= 1e-6:
        found["loss_constant"].append(
            Finding("loss_constant", "loss", f"{len(losses)} losses within 1e-6 of {losses[0]}")
        )
    if prob_rows:
        found["probabilities_as_logits"].append(
            Finding("probabilities_as_logits", "output", "outputs are softmax rows, not logits")
        )
    if is_class and steps > 0 and out.dim() == 2 and out.shape[1] >= 2 and finite:
        baseline = _entropy_of_labels(y)
        if baseline > 0 and min(finite) > 0.9 * baseline:
            found["at_chance"].append(
                Finding("at_chance", "loss", f"best loss {min(finite):.4f} vs {baseline:.4f}")
            )
    return [f for code in CODES for f in found[code]]
