"""``reachable_params`` walks the graph breadth first with a deque, remembering nodes by id
(and keeping them alive so ids stay unique) and reading leaves from ``AccumulateGrad`` nodes
by type name; ``accumulated_grad`` asks ``torch.autograd.grad`` for each micro-batch's share
and writes the sum into ``.grad`` itself, which is the same full-batch gradient."""

from collections import deque


def reachable_params(
    loss: Tensor, named_params: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]
) -> dict[str, bool]:
    """{name: True if a gradient path leads from ``loss`` back to that parameter}, in the
    order given, found by walking ``loss.grad_fn.next_functions``: no backward pass runs,
    no ``.grad`` is touched and the graph stays usable. Parameters are matched by identity."""
    if isinstance(named_params, Mapping):
        named = list(named_params.items())
    else:
        named = [(name, tensor) for name, tensor in named_params]
    leaves: list[Tensor] = []
    if loss.grad_fn is None and loss.requires_grad:
        leaves.append(loss)  # a leaf loss reaches itself and nothing else
    visited_ids: set[int] = set()
    alive: list[Any] = []  # holding the node objects keeps their ids from being reused
    queue = deque([loss.grad_fn] if loss.grad_fn is not None else [])
    while queue:
        node = queue.popleft()
        if id(node) in visited_ids:
            continue
        visited_ids.add(id(node))
        alive.append(node)
        if type(node).__name__ == "AccumulateGrad":
            leaves.append(node.variable)
        for parent, _index in node.next_functions:
            if parent is not None and id(parent) not in visited_ids:
                queue.append(parent)
    leaf_ids = {id(leaf) for leaf in leaves}
    return {name: id(tensor) in leaf_ids for name, tensor in named}


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
    total_examples = inputs.shape[0]
    for p in model.parameters():
        p.grad = None  # nothing stale survives, frozen parameters included
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    params = [p for _name, p in trainable]
    sums: list[Tensor | None] = [None] * len(params)
    pieces = zip(torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro))
    for part_x, part_y in pieces:
        if part_x.shape[0] == 0:
            continue  # an empty micro-batch holds no examples and adds nothing
        weight = part_x.shape[0] / total_examples
        part_loss = loss_fn(model(part_x), part_y) * weight
        grads = torch.autograd.grad(part_loss, params, allow_unused=True)
        for i, g in enumerate(grads):
            if g is not None:
                sums[i] = g if sums[i] is None else sums[i] + g
    result: dict[str, Tensor] = {}
    for (name, p), total in zip(trainable, sums):
        if total is None:
            result[name] = torch.zeros_like(p)  # never reached: .grad stays None
        else:
            p.grad = torch.empty_like(p).copy_(total)  # laid out like p itself
            result[name] = p.grad.clone()
    return result
