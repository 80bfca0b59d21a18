"""Weights scaled by multiplying with 1/sqrt(fan_in) (the spec's wording; it can differ from
dividing by sqrt(fan_in) in the last bit), biases made leaves by ``requires_grad=True`` at
creation, the layers through ``F.linear`` with ``clamp(min=0)``, and a loss that shifts by a
*detached* row max and picks the target with a one-hot mask. The shift cancels exactly in
log sum exp(z - m) - (z_t - m), so detaching it changes no value and no gradient; the rest is
the contract's arithmetic in another order."""

import torch.nn.functional as F


def init_mlp(d_in: int, hidden: int, n_classes: int, generator: torch.Generator) -> Params:
    first = torch.randn(d_in, hidden, generator=generator) * (1.0 / math.sqrt(d_in))
    second = torch.randn(hidden, n_classes, generator=generator) * (1.0 / math.sqrt(hidden))
    return {
        "W1": first.requires_grad_(True),
        "b1": torch.zeros(hidden, requires_grad=True),
        "W2": second.requires_grad_(True),
        "b2": torch.zeros(n_classes, requires_grad=True),
    }


def mlp_forward(params: Params, X: Tensor) -> Tensor:
    hidden = F.linear(X, params["W1"].t(), params["b1"]).clamp(min=0)
    return F.linear(hidden, params["W2"].t(), params["b2"])


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    n, n_classes = logits.shape
    top = logits.detach().amax(dim=1, keepdim=True)  # a constant shift cancels exactly
    shifted = logits - top  # (N, C), each row's largest entry is 0
    log_norm = shifted.exp().sum(dim=1).log()  # (N,)
    mask = F.one_hot(targets.long(), n_classes).to(logits.dtype)
    target_score = (shifted * mask).sum(dim=1)  # (N,), the target's shifted logit
    return (log_norm - target_score).sum() / n


def sgd_step(params: Params, lr: float) -> None:
    with torch.set_grad_enabled(False):
        for tensor in params.values():
            grad = tensor.grad
            if grad is not None:
                tensor.sub_(lr * grad)


def step_report(before: Params, params: Params) -> list[StepRow]:
    def all_finite(t: Tensor) -> bool:
        return not bool(torch.isnan(t).any() or torch.isinf(t).any())

    rows: list[StepRow] = []
    for name in params:
        now = params[name]
        grad = now.grad if now.is_leaf else None
        finite = all_finite(now.detach()) and (grad is None or all_finite(grad))
        change = (now.detach() - before[name].detach()).abs()
        moved = float(torch.amax(change)) if change.numel() > 0 else 0.0
        grad_norm = 0.0 if grad is None else math.sqrt(float(grad.double().square().sum()))
        rows.append(
            StepRow(
                name=name,
                is_leaf=now.is_leaf,
                grad_is_none=grad is None,
                grad_norm=grad_norm,
                finite=finite,
                moved=moved,
            )
        )
    return rows
