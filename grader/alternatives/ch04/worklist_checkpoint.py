"""``unregistered_state`` walks the module tree with an explicit stack of (path, value)
pairs instead of a recursive helper, ``optimizer_coverage`` keeps a dict of the optimizer's
tensors keyed by id, and the checkpoint uses its own layout (other key names, no optimizer
entry when none was given) written through a file handle and read back onto the CPU.
The paths, the identity comparison, strict loading and the returned extras are the
contract's; the file's inner layout is the module's own business."""


def unregistered_state(model: nn.Module) -> list[str]:
    known: set[int] = {id(sub) for sub in model.modules()}
    known.update(id(t) for t in model.parameters())
    known.update(id(t) for t in model.buffers())
    skip = frozenset(vars(nn.Module()))  # nn.Module's own bookkeeping attributes
    report: list[str] = []
    for prefix, owner in model.named_modules():
        pending = [
            (f"{prefix}.{attr}" if prefix else attr, value)
            for attr, value in owner.__dict__.items()
            if attr not in skip
        ]
        pending.reverse()  # a stack pops from the end: keep the attributes' own order
        while pending:
            where, value = pending.pop()
            if isinstance(value, nn.Module | Tensor):
                if id(value) not in known:
                    report.append(where)  # reported as a whole, never opened
                continue
            if isinstance(value, dict):
                children = [(f"{where}[{k!r}]", v) for k, v in value.items()]
            elif isinstance(value, list | tuple):
                children = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
            else:
                continue
            pending.extend(reversed(children))
    return report


def optimizer_coverage(model: nn.Module, optimizer: torch.optim.Optimizer) -> Coverage:
    held: dict[int, Tensor] = {}
    for group in optimizer.param_groups:
        for tensor in group["params"]:
            held[id(tensor)] = tensor
    model_ids = {id(p) for p in model.parameters()}
    missing = []
    for name, param in model.named_parameters():
        if param.requires_grad and id(param) not in held:
            missing.append(name)
    foreign = sum(1 for key in held if key not in model_ids)
    return Coverage(missing=missing, foreign=foreign)


def save_checkpoint(
    path: str | Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    **extra: Any,
) -> Path:
    target = Path(path)
    payload: dict[str, Any] = {"weights": model.state_dict(), "meta": dict(extra)}
    if optimizer is not None:
        payload["optim"] = optimizer.state_dict()
    with target.open("wb") as handle:
        torch.save(payload, handle)
    return target


def load_checkpoint(
    path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer | None = None
) -> dict[str, Any]:
    with Path(path).open("rb") as handle:
        payload = torch.load(handle, map_location="cpu", weights_only=True)
    model.load_state_dict(payload["weights"])  # strict by default: RuntimeError on a mismatch
    if optimizer is not None:
        if "optim" not in payload:
            raise ValueError(f"{path} was saved without an optimizer state")
        optimizer.load_state_dict(payload["optim"])
    return dict(payload["meta"])
