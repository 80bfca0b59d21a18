"""Whether backward reached a parameter is read after optimizer.step(): a step that
clears the gradients makes every parameter look unreachable instead of not moving."""

EXPECT = r"not_moving|never moved"
SELECT = "diagnose"


def diagnose(model, optimizer, loss_fn, batch, steps):
    model, optimizer = copy.deepcopy((model, optimizer))
    named = dict(model.named_parameters())
    held_ids = {id(p) for g in optimizer.param_groups for p in g["params"]}
    findings = []
    for n, p in named.items():
        if p.requires_grad and id(p) not in held_ids:
            findings.append(Finding("not_in_optimizer", n, "not held"))
        if not p.requires_grad and id(p) in held_ids:
            findings.append(Finding("frozen", n, "held but frozen"))
    if any(
        id(p) not in {id(q) for q in named.values()}
        for g in optimizer.param_groups
        for p in g["params"]
    ):
        findings.append(Finding("not_in_model", "optimizer", "foreign tensors"))
    x, y = batch
    before = {n: p.detach().clone() for n, p in named.items()}
    losses, got_grad, outputs = [], set(), None
    for _ in range(steps):
        optimizer.zero_grad()
        out = model(x)
        outputs = out.detach() if outputs is None else outputs
        loss = loss_fn(out, y)
        losses.append(loss.item())
        if loss.requires_grad:
            loss.backward()
        optimizer.step()
        got_grad |= {n for n, p in named.items() if p.grad is not None}
    if steps:
        for n, p in named.items():
            if p.requires_grad and n not in got_grad:
                findings.append(Finding("no_grad", n, ".grad stayed None"))
        if any(not math.isfinite(v) for v in losses):
            findings.append(Finding("nonfinite", "loss", "nonfinite loss"))
        for n, p in named.items():
            if n in got_grad and id(p) in held_ids and torch.equal(p.detach(), before[n]):
                findings.append(Finding("not_moving", n, "never changed"))
    if (
        len(losses) >= 2
        and all(math.isfinite(v) for v in losses)
        and max(losses) - min(losses) <= 1e-6
    ):
        findings.append(Finding("loss_constant", "loss", "constant"))
    if outputs is not None and not y.is_floating_point() and outputs.dim() == 2:
        rows = outputs.sum(1)
        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):
            findings.append(Finding("probabilities_as_logits", "output", "probabilities"))
        chance = _label_entropy(y)
        finite = [v for v in losses if math.isfinite(v)]
        if finite and min(finite) > 0.9 * chance:
            findings.append(Finding("at_chance", "loss", "chance"))
    return findings
