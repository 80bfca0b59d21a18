"""Same mathematics through other torch calls: labels from counting positive coordinates,
the split by ``torch.split``, ReLU as ``torch.where``, the loss from ``torch.logsumexp`` with
advanced indexing, the update as ``add_(grad, alpha=-lr)``, norms from ``torch.linalg``, and a
loop that zeroes ``.grad`` in place and counts correct validation rows itself. Each piece keeps
its contract: (x0 > 0) xor (x1 > 0) is "exactly one coordinate is positive", logsumexp is the
stable normaliser the reading allows, a zeroed gradient is a cleared one."""


def make_xor_data(n: int, seed: int) -> XorData:
    gen = torch.Generator()
    gen.manual_seed(seed)
    points = torch.randn(n, 2, generator=gen)
    # xor of two booleans: exactly one of the two coordinates is positive
    labels = ((points > 0).sum(dim=1) == 1).to(torch.int64)
    order = torch.randperm(n, generator=gen)
    cut = int(0.8 * n)
    train_idx, val_idx = torch.split(order, [cut, n - cut])
    return XorData(
        points.index_select(0, train_idx),
        labels.index_select(0, train_idx),
        points.index_select(0, val_idx),
        labels.index_select(0, val_idx),
    )


def mlp_forward(params: Params, X: Tensor) -> Tensor:
    pre = X @ params["W1"] + params["b1"]
    hidden = torch.where(pre > 0, pre, 0.0)  # ReLU, gradient 1 where positive, else 0
    return hidden @ params["W2"] + params["b2"]


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    rows = torch.arange(logits.shape[0], device=logits.device)
    per_example = torch.logsumexp(logits, dim=1) - logits[rows, targets.long()]
    return per_example.mean()


def sgd_step(params: Params, lr: float) -> None:
    with torch.no_grad():
        for tensor in params.values():
            if tensor.grad is None:
                continue
            tensor.add_(tensor.grad, alpha=-lr)


def step_report(before: Params, params: Params) -> list[StepRow]:
    report = []
    for key, tensor in params.items():
        leaf = tensor.is_leaf
        g = tensor.grad if leaf else None  # only a leaf can hold a gradient to read
        values = tensor.detach()
        ok = bool(torch.isfinite(values).all())
        if g is not None and ok:
            ok = bool(torch.isfinite(g).all())
        if values.numel() == 0:
            largest = 0.0
        else:
            delta = values - before[key].detach()
            largest = float(torch.linalg.vector_norm(delta, ord=float("inf")))
        norm = 0.0 if g is None else float(torch.linalg.vector_norm(g))
        report.append(StepRow(key, leaf, g is None, norm, ok, largest))
    return report


def train_mlp(
    data: XorData,
    hidden: int = 16,
    lr: float = 0.5,
    steps: int = 500,
    seed: int = 1,
    forward: Callable[[Params, Tensor], Tensor] | None = None,
) -> History:
    model = mlp_forward if forward is None else forward
    classes = int(torch.cat([data.y_train, data.y_val]).max()) + 1
    gen = torch.Generator()
    gen.manual_seed(seed)
    params = init_mlp(data.X_train.shape[1], hidden, classes, gen)
    losses: list[float] = []
    accs: list[float] = []
    n_val = data.y_val.shape[0]
    for _ in range(steps):
        for tensor in params.values():
            if tensor.grad is not None:
                tensor.grad.zero_()  # cleared in place: backward then writes a fresh gradient
        loss = cross_entropy(model(params, data.X_train), data.y_train)
        loss.backward()
        sgd_step(params, lr)
        losses.append(float(loss.detach()))
        with torch.no_grad():
            hits = int((model(params, data.X_val).argmax(dim=1) == data.y_val).sum())
        accs.append(hits / n_val)
    return History(params, losses, accs)
