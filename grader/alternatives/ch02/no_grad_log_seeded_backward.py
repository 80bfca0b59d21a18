"""The repair builds the feature with ``torch.mul(x, w1)`` and takes the log's copy with
``clone()`` inside ``torch.no_grad()``; ``accumulated_grad`` runs the model on
``index_select`` copies of tensor_split's pieces (same examples, same sizes) and weights
each piece by seeding its backward with the piece's share instead of scaling the loss."""


def first_stage(w1: Tensor, x: Tensor, log: list[Tensor]) -> Tensor:
    """The first stage of the two-stage model, ``w1 * x`` (same shape as ``x``). Appends a
    copy of its output to ``log`` for later inspection and returns the output itself."""
    features = torch.mul(x, w1)
    with torch.no_grad():
        log.append(features.clone())  # made without recording: a plain copy for the log
    return features


def accumulated_grad(
    model: nn.Module,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    batch: tuple[Tensor, Tensor],
    n_micro: int,
) -> dict[str, Tensor]:
    """Accumulate the gradient of ``loss_fn(model(inputs), targets)`` (a mean over the
    batch) over ``n_micro`` micro-batches (``torch.tensor_split`` of the batch, sizes may
    differ by one) so that it equals the full-batch gradient, whatever ``.grad`` held
    before. Leaves it in each parameter's ``.grad`` and returns {name: copy of it}; takes
    no step (parameter values stay as they were) and does not change the batch."""
    inputs, targets = batch
    count = len(inputs)
    for p in model.parameters():
        p.grad = None  # start from nothing, not from a stale gradient
    positions = torch.arange(count, device=inputs.device)
    for rows in torch.tensor_split(positions, n_micro):
        if rows.numel() == 0:
            continue
        micro_x = inputs.index_select(0, rows)
        micro_y = targets.index_select(0, rows.to(targets.device))
        micro_loss = loss_fn(model(micro_x), micro_y)
        share = torch.full_like(micro_loss, rows.numel() / count)
        micro_loss.backward(gradient=share)  # d(share * loss): this piece's weight in the mean
    return {
        name: p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
        for name, p in model.named_parameters()
        if p.requires_grad
    }
