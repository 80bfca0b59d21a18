"""Non-finite means nan only: losses, gradients and parameters are tested with isnan,
so an infinite loss or gradient goes unreported."""

EXPECT = r"inf"
SELECT = "infinite or nonfinite or loss_constant"


def diagnose(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFn,
    batch: tuple[Tensor, Tensor],
    steps: int,
) -> list[Finding]:
    """Run ``steps`` full-batch training steps (zero_grad, forward, backward, step) on a deep
    copy of ``(model, optimizer)`` — the caller's objects are left untouched — and return a
    Finding for each problem; ``[]`` for a healthy setup. Codes:
    ``not_in_optimizer``, ``frozen`` (the optimizer holds a parameter that does not require
    grad), ``not_in_model`` (it holds a tensor the model does not own), ``no_grad``,
    ``nonfinite``, ``not_moving``, ``loss_constant`` (all losses equal to 1e-6),
    ``probabilities_as_logits`` (non-negative output rows summing to 1, for integer targets)
    and ``at_chance`` (integer targets; the best loss stays above 0.9 x the entropy of the
    batch's label frequencies)."""
    model, optimizer = copy.deepcopy((model, optimizer))  # one memo: the copies share tensors
    named = dict(model.named_parameters())
    name_of = {id(p): n for n, p in named.items()}
    held = [p for group in optimizer.param_groups for p in group["params"]]
    held_ids = {id(p) for p in held}
    findings: list[Finding] = []

    for n, p in named.items():
        if p.requires_grad and id(p) not in held_ids:
            findings.append(
                Finding("not_in_optimizer", n, "trainable, but the optimizer does not hold it")
            )
        if not p.requires_grad and id(p) in held_ids:
            findings.append(
                Finding("frozen", n, "the optimizer holds it, but it does not require grad")
            )
    foreign = [p for p in held if id(p) not in name_of]
    if foreign:
        findings.append(
            Finding(
                "not_in_model",
                "optimizer",
                f"the optimizer holds {len(foreign)} tensor(s) the model does not own "
                "(a layer replaced after the optimizer was built?)",
            )
        )

    x, y = batch
    before = {n: p.detach().clone() for n, p in named.items()}
    losses: list[float] = []
    got_grad: set[str] = set()
    nonzero_grad: set[str] = set()
    nonfinite: dict[str, str] = {}
    outputs = None
    for _ in range(steps):
        optimizer.zero_grad()
        out = model(x)
        if outputs is None:
            outputs = out.detach()
        loss = loss_fn(out, y)
        losses.append(loss.item())
        if math.isnan(losses[-1]):
            nonfinite.setdefault("loss", f"the loss became {losses[-1]} at step {len(losses) - 1}")
        if loss.requires_grad:  # with everything frozen there is nothing to backpropagate
            loss.backward()
        for n, p in named.items():
            if p.grad is not None:
                got_grad.add(n)
                if torch.isnan(p.grad).any():
                    nonfinite.setdefault(
                        n, f"its gradient became non-finite at step {len(losses) - 1}"
                    )
                elif p.grad.abs().sum() > 0:
                    nonzero_grad.add(n)
        optimizer.step()
    for n, p in named.items():
        if torch.isnan(p.detach()).any():
            nonfinite.setdefault(n, "its values became non-finite")

    if steps > 0:
        for n, p in named.items():
            if p.requires_grad and n not in got_grad:
                findings.append(
                    Finding("no_grad", n, "backward never reached it: .grad stayed None")
                )
        findings += [Finding("nonfinite", w, d) for w, d in nonfinite.items()]
        for n, p in named.items():
            if n in got_grad and id(p) in held_ids and torch.equal(p.detach(), before[n]):
                why = (
                    "it had a nonzero gradient but never changed: lr 0, or gradients cleared "
                    "before the step?"
                    if n in nonzero_grad
                    else "its gradient was exactly zero on every step"
                )
                findings.append(Finding("not_moving", n, why))
    if len(losses) >= 2 and all(math.isfinite(v) for v in losses):
        if max(losses) - min(losses) <= 1e-6:
            findings.append(
                Finding("loss_constant", "loss", f"all {len(losses)} losses equal {losses[0]:.6f}")
            )

    classification = (
        outputs is not None
        and not y.is_floating_point()
        and outputs.dim() == 2
        and outputs.shape[1] >= 2
    )
    if classification:
        rows = outputs.sum(dim=1)
        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):
            findings.append(
                Finding(
                    "probabilities_as_logits",
                    "output",
                    "the model's outputs are probabilities (rows sum to 1) but the loss expects "
                    "logits: cross_entropy applies log_softmax itself",
                )
            )
        chance = _label_entropy(y)
        finite = [v for v in losses if math.isfinite(v)]
        if finite and chance > 0 and min(finite) > 0.9 * chance:
            findings.append(
                Finding(
                    "at_chance",
                    "loss",
                    f"the best loss {min(finite):.4f} never went below the label-frequency "
                    f"baseline {chance:.4f} (shuffled labels, or nothing learnable?)",
                )
            )
    return findings
