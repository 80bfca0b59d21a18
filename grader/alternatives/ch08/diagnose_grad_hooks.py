"""``diagnose`` gathers gradient evidence with ``register_post_accumulate_grad_hook`` on the copied
parameters (they fire inside backward, so they see each gradient before ``step`` could clear it)
instead of scanning ``.grad`` after backward.
Same codes under the same conditions; only how the evidence is collected differs.
"""

import copy
import math

import torch
from torch import Tensor, nn


def diagnose(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFn,
    batch: tuple[Tensor, Tensor],
    steps: int,
) -> list[Finding]:
    """Static ownership checks, then a hooked training run on a deep copy."""
    model, optimizer = copy.deepcopy((model, optimizer))
    names = [n for n, _ in model.named_parameters()]
    tensors = [p for _, p in model.named_parameters()]
    in_opt = {id(t) for g in optimizer.param_groups for t in g["params"]}
    in_model = {id(t) for t in tensors}
    out: list[Finding] = []
    for n, p in zip(names, tensors):
        if p.requires_grad and id(p) not in in_opt:
            out.append(Finding("not_in_optimizer", n, "trainable but missing from the optimizer"))
        if id(p) in in_opt and not p.requires_grad:
            out.append(Finding("frozen", n, "in the optimizer but requires_grad is False"))
    strangers = len(in_opt - in_model)
    if strangers:
        out.append(
            Finding(
                "not_in_model", "optimizer", f"{strangers} optimizer tensor(s) not in the model"
            )
        )

    seen: dict[str, dict[str, bool]] = {n: {"any": False, "nonzero": False} for n in names}
    broken: dict[str, str] = {}
    step_no = [0]

    def watcher(n: str):
        def hook(p: Tensor) -> None:
            seen[n]["any"] = True
            if not bool(torch.isfinite(p.grad).all()):
                broken.setdefault(n, f"gradient non-finite at step {step_no[0]}")
            elif bool(p.grad.count_nonzero() > 0):
                seen[n]["nonzero"] = True

        return hook

    handles = [
        p.register_post_accumulate_grad_hook(watcher(n))
        for n, p in zip(names, tensors)
        if p.requires_grad
    ]
    snapshot = [p.detach().clone() for p in tensors]
    x, y = batch
    losses: list[float] = []
    first_out = None
    for i in range(steps):
        step_no[0] = i
        optimizer.zero_grad()
        pred = model(x)
        if first_out is None:
            first_out = pred.detach()
        loss = loss_fn(pred, y)
        losses.append(loss.item())
        if not math.isfinite(losses[-1]):
            broken.setdefault("loss", f"loss {losses[-1]} at step {i}")
        if loss.requires_grad:
            loss.backward()
        optimizer.step()
    for h in handles:
        h.remove()

    if steps > 0:
        for n, p in zip(names, tensors):
            if p.requires_grad and not seen[n]["any"]:
                out.append(Finding("no_grad", n, "backward never produced a gradient for it"))
        for n, p in zip(names, tensors):
            if not bool(torch.isfinite(p.detach()).all()):
                broken.setdefault(n, "its values are non-finite after training")
        out.extend(Finding("nonfinite", w, d) for w, d in broken.items())
        for n, p, before in zip(names, tensors, snapshot):
            if seen[n]["any"] and id(p) in in_opt and torch.equal(p.detach(), before):
                kind = "a nonzero" if seen[n]["nonzero"] else "an all-zero"
                out.append(Finding("not_moving", n, f"never changed despite {kind} gradient"))
    if len(losses) > 1 and all(map(math.isfinite, losses)):
        if max(losses) - min(losses) <= 1e-6:
            out.append(Finding("loss_constant", "loss", f"every loss is {losses[0]:.6f}"))

    if (
        first_out is not None
        and not y.is_floating_point()
        and first_out.dim() == 2
        and first_out.size(1) >= 2
    ):
        sums = first_out.sum(dim=1)
        if bool((first_out >= 0).all()) and torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            out.append(Finding("probabilities_as_logits", "output", "rows are probabilities"))
        counts = torch.unique(y, return_counts=True)[1].double()
        ent = float(torch.special.entr(counts / counts.sum()).sum())
        usable = [v for v in losses if math.isfinite(v)]
        if usable and ent > 0 and min(usable) > 0.9 * ent:
            out.append(Finding("at_chance", "loss", f"best {min(usable):.4f}, chance {ent:.4f}"))
    return out
