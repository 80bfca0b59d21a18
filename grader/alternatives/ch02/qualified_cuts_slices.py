"""``find_graph_cuts`` reports each op under its qualified name (``torch.Tensor.detach``,
which contains the short one), flattens inputs and outputs with pytree and finds the caller
by module (the first frame whose globals are neither torch's nor this module's); the repair
logs ``detach().clone()``; ``accumulated_grad`` slices tensor_split's pieces by hand, sums
per-example losses into zeroed (not cleared) gradients and divides by the batch size once
at the end."""

from torch.overrides import resolve_name


def _numbers_left_torch(value: Any) -> bool:
    """Is ``value`` real-valued data that a gradient could have flowed through?"""
    if isinstance(value, Tensor):
        return value.dtype.is_floating_point or value.dtype.is_complex
    if isinstance(value, np.ndarray):
        return np.issubdtype(value.dtype, np.inexact)
    return isinstance(value, (float, np.floating))


def _calling_site() -> str:
    """``file:line`` of the innermost frame that belongs neither to torch nor to us."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        ours = frame.f_globals is globals()
        if not ours and module.partition(".")[0] != "torch":
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>:0"


class _GraphCutWatcher(TorchFunctionMode):
    def __init__(self, sink: list[Cut]) -> None:
        super().__init__()
        self.sink = sink

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = {} if kwargs is None else kwargs
        inputs, _ = tree_flatten((args, kwargs))
        on_path = [isinstance(v, Tensor) and v.requires_grad for v in inputs]  # before: an
        result = func(*args, **kwargs)  # in-place op (detach_) may take the flag away
        if not any(on_path):
            return result  # nothing here was on a gradient path to begin with
        label = resolve_name(func) or getattr(func, "__name__", None) or repr(func)
        label = label.removesuffix(".__get__")  # torch.Tensor.data.__get__ -> torch.Tensor.data
        short = label.rsplit(".", 1)[-1]
        if short.endswith("_like") or short.startswith("new_") or short in ("grad", "_grad"):
            return result  # reads a shape, or the gradient itself
        outputs, _ = tree_flatten(result)
        if any(isinstance(v, Tensor) and v.requires_grad for v in outputs):
            return result  # the path goes on
        if any(_numbers_left_torch(v) for v in outputs):
            self.sink.append(Cut(label, _calling_site()))
        return result


def find_graph_cuts(fn: Callable[..., Any], *args: Any) -> list[Cut]:
    """Run ``fn(*args)`` and return, in order, every torch operation that took an input
    requiring grad and produced real numbers that do not (detach, ``.data``, an op under
    ``no_grad``, ``.item()``/``.tolist()``/``float()``, ``torch.tensor(t)``). Integer and
    bool results, shape-only constructors (``zeros_like``, ``new_*``) and ``.grad`` reads
    are not cuts."""
    cuts: list[Cut] = []
    with _GraphCutWatcher(cuts):
        fn(*args)
    return cuts


def first_stage(w1: Tensor, x: Tensor, log: list[Tensor]) -> Tensor:
    """The first stage of the two-stage model, ``w1 * x`` (same shape as ``x``). Appends a
    copy of its output to ``log`` for later inspection and returns the output itself."""
    features = w1 * x
    log.append(features.detach().clone())  # its own memory, outside the graph
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
    if n_micro < 1:
        raise ValueError(f"n_micro must be at least 1, got {n_micro}")
    inputs, targets = batch
    size = inputs.shape[0]
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    model.zero_grad(set_to_none=False)  # stale gradients become zeros, in their own memory
    base, longer = divmod(size, n_micro)  # tensor_split: the first `longer` pieces get one more
    start = 0
    for k in range(n_micro):
        stop = start + base + (1 if k < longer else 0)
        if stop > start:
            piece_loss = loss_fn(model(inputs[start:stop]), targets[start:stop])
            (piece_loss * (stop - start)).backward()  # this piece's sum over its examples
        start = stop
    copies: dict[str, Tensor] = {}
    for name, p in named:
        if p.grad is None:
            copies[name] = torch.zeros_like(p)
        else:
            p.grad.div_(size)  # the sum over all examples becomes the full-batch mean
            copies[name] = p.grad.clone()
    return copies
