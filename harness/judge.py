"""How a test judges what the student's code returned: comparisons that mean what they say.

``torch.allclose(got, want)``, ``(got == want).all()`` and ``got == pytest.approx(want)``
broadcast before they compare, so a ``torch.empty(0, 1, 1, 1, 1, 1, 1)`` — legal plain
data — satisfies every one of them against any tensor of up to six dimensions. Each check
here looks at the kind first (an exact ``torch.Tensor``, an exact ``float``: never a
subclass, whose ``__eq__`` may lie), then shape, dtype and element count, and only then the
values, with explicit tolerances::

    judge.close(got, reference(x), "pairwise_sq_dists(x, y): expand the square", atol=1e-5, rtol=1e-4)
    judge.equal(kept, torch.tensor([0, 2]), "keep_mask picks rows 0 and 2")
    judge.number(result.w, 2.6, "train_scalar: one step from the book", abs=1e-5)
    judge.all_finite(loss_curve, "the loss stays finite")

A failed check raises ``AssertionError`` with what was observed (the shape, the dtype or the
first difference, from ``harness.evidence``) followed by the caller's teaching message. The
``is_*`` forms answer ``True``/``False`` under the same rules, for conditions such as
"these two outputs must differ". Dtype policy (``dtype=``): ``"same"`` (the expected
tensor's dtype, the default), ``"float"`` (any floating dtype; values compared after
promotion), or one ``torch.dtype``.
"""

from __future__ import annotations

import math

import torch

from harness.evidence import brief, first_difference

__all__ = [
    "all_finite",
    "all_true",
    "answer",
    "close",
    "differ",
    "equal",
    "exactly",
    "is_close",
    "is_equal",
    "is_number",
    "mismatch",
    "number",
]


def _say(observed: str, message: str) -> str:
    return f"{observed} — {message}" if message else observed


def _kind(x) -> str:
    if isinstance(x, torch.Tensor) and type(x) is not torch.Tensor:
        return f"a {type(x).__name__} (a tensor subclass, not a plain tensor)"
    return f"{type(x).__name__} {brief(x, 60)}"


def _dtype_problem(got: torch.Tensor, expected: torch.Tensor, dtype) -> str | None:
    if dtype == "same":
        want = expected.dtype
    elif dtype == "float":
        if got.is_floating_point():
            return None
        return f"got dtype {got.dtype}, expected a floating dtype"
    elif isinstance(dtype, torch.dtype):
        want = dtype
    else:
        raise ValueError(f"dtype policy {dtype!r}: use 'same', 'float' or a torch.dtype")
    return None if got.dtype == want else f"got dtype {got.dtype}, expected {want}"


def mismatch(
    got,
    expected,
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    dtype="same",
    equal_nan: bool = False,
) -> str | None:
    """What differs between tensor ``got`` and ``expected`` (kind, shape, dtype, then the
    first value beyond ``atol + rtol * |expected|``), in a line; ``None`` if nothing does."""
    if type(got) is not torch.Tensor:
        return f"got {_kind(got)}, expected a tensor"
    if not isinstance(expected, torch.Tensor):
        expected = torch.as_tensor(expected)
    if tuple(got.shape) != tuple(expected.shape):
        return f"got shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    problem = _dtype_problem(got, expected, dtype)
    if problem:
        return problem
    if got.numel() != expected.numel():  # pragma: no cover - implied by the shape
        return f"got {got.numel()} elements, expected {expected.numel()}"
    g, e = got.detach().cpu(), expected.detach().cpu()
    try:
        torch.testing.assert_close(
            g,
            e,
            atol=atol,
            rtol=rtol,
            equal_nan=equal_nan,
            check_dtype=False,
            check_device=False,
            check_layout=False,
            check_stride=False,
        )
    except AssertionError:
        return first_difference(g, e, atol=atol, rtol=rtol, equal_nan=equal_nan)
    return None


def close(
    got,
    expected,
    message: str = "",
    *,
    atol: float,
    rtol: float,
    dtype="same",
    equal_nan: bool = False,
) -> None:
    """Assert tensor ``got`` has ``expected``'s shape and dtype policy and its values
    within ``atol + rtol * |expected|`` (``torch.testing.assert_close`` semantics)."""
    problem = mismatch(got, expected, atol=atol, rtol=rtol, dtype=dtype, equal_nan=equal_nan)
    if problem:
        raise AssertionError(_say(problem, message))


def equal(got, expected, message: str = "", *, dtype="same") -> None:
    """Assert tensor ``got`` has ``expected``'s shape and dtype policy and exactly its values."""
    close(got, expected, message, atol=0.0, rtol=0.0, dtype=dtype)


def is_close(
    got, expected, *, atol: float, rtol: float, dtype="same", equal_nan: bool = False
) -> bool:
    """Whether ``close`` would pass: a tensor of the right shape and dtype, values within."""
    return mismatch(got, expected, atol=atol, rtol=rtol, dtype=dtype, equal_nan=equal_nan) is None


def warm_up() -> None:
    """Pay the first comparison's one-time cost now: ``torch.testing`` imports its DTensor
    support on first use (~0.5 s). The grader calls this before it forks student
    processes, each of which would pay it again. Only a saving: a failure here is left
    for the first real comparison to meet and report."""
    try:
        mismatch(torch.zeros(1), torch.zeros(1))
    except Exception:  # noqa: BLE001
        pass


def is_equal(got, expected, *, dtype="same") -> bool:
    """Whether ``equal`` would pass: a tensor of the right shape and dtype, the same values."""
    return mismatch(got, expected, dtype=dtype) is None


def differ(got, other, *, atol: float, rtol: float) -> bool:
    """Whether two finished answers differ: both non-empty tensors of one shape and dtype,
    finite, and some entry apart by more than ``atol + rtol * |other|`` (NaN, an empty or a
    misshapen value never counts as "different" — it is no answer)."""
    for x in (got, other):
        if type(x) is not torch.Tensor or x.numel() == 0:
            return False
        if (x.is_floating_point() or x.is_complex()) and not bool(torch.isfinite(x).all()):
            return False
    if got.shape != other.shape or got.dtype != other.dtype:
        return False
    return mismatch(got, other, atol=atol, rtol=rtol) is not None


def _number_problem(got, expected, abs_: float, rel: float, where: str) -> str | None:
    if isinstance(expected, list | tuple):
        if type(got) not in (list, tuple) or len(got) != len(expected):
            return f"{where}got {_kind(got)}, expected a sequence of {len(expected)} numbers"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            problem = _number_problem(g, e, abs_, rel, f"{where}[{i}]: ")
            if problem:
                return problem
        return None
    if type(got) not in (int, float):
        return f"{where}got {_kind(got)}, expected a plain number near {expected!r}"
    if type(expected) is bool or not isinstance(expected, int | float):
        raise TypeError(f"judge.number compares numbers, not {type(expected).__name__}")
    if math.isnan(expected) and math.isnan(got):
        return None
    if got == expected or math.isclose(got, expected, rel_tol=rel, abs_tol=abs_):
        return None
    return f"{where}got {got!r}, expected {expected!r} (within abs {abs_:g}, rel {rel:g})"


def is_number(got, expected, *, abs: float = 0.0, rel: float = 0.0) -> bool:  # noqa: A002
    """Whether ``number`` would pass: plain numbers, each within the tolerance."""
    return _number_problem(got, expected, abs, rel, "") is None


def number(got, expected, message: str = "", *, abs: float = 0.0, rel: float = 0.0) -> None:  # noqa: A002
    """Assert ``got`` is a plain ``int``/``float`` (never a bool or a subclass) within
    ``abs + rel * |expected|`` of ``expected``; element-wise for a list or tuple of them."""
    problem = _number_problem(got, expected, abs, rel, "")
    if problem:
        raise AssertionError(_say(problem, message))


def _exact_problem(got, expected, where: str) -> str | None:
    if type(got) is not type(expected):
        return f"{where}got {_kind(got)}, expected {type(expected).__name__} {expected!r}"
    if isinstance(expected, list | tuple):
        if len(got) != len(expected):
            return f"{where}got {len(got)} items, expected {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            problem = _exact_problem(g, e, f"{where}[{i}]: ")
            if problem:
                return problem
        return None
    if isinstance(expected, dict):
        if list(got) != list(expected) and set(got) != set(expected):
            return f"{where}got keys {sorted(map(str, got))}, expected {sorted(map(str, expected))}"
        for k in expected:
            problem = _exact_problem(got[k], expected[k], f"{where}[{k!r}]: ")
            if problem:
                return problem
        return None
    if isinstance(expected, torch.Tensor):
        return mismatch(got, expected)
    if expected is None or type(expected) in (bool, int, float, str, bytes, complex):
        return None if got == expected else f"{where}got {got!r}, expected {expected!r}"
    raise TypeError(f"judge.exactly compares plain data, not {type(expected).__name__}")


def exactly(got, expected, message: str = "") -> None:
    """Assert ``got`` is ``expected``: the same exact types (no subclass, so no lying
    ``__eq__``) and equal values, item by item through lists, tuples and dicts."""
    problem = _exact_problem(got, expected, "")
    if problem:
        raise AssertionError(_say(problem, message))


def all_finite(x, message: str = "", *, empty_ok: bool = False) -> None:
    """Assert every value of tensor (or plain float) ``x`` is finite; an empty tensor
    fails unless the caller says ``empty_ok`` (nothing finite was shown)."""
    if type(x) in (int, float):
        if not math.isfinite(x):
            raise AssertionError(_say(f"got {x!r}", message))
        return
    if type(x) is not torch.Tensor:
        raise AssertionError(_say(f"got {_kind(x)}, expected a tensor", message))
    if x.numel() == 0 and not empty_ok:
        raise AssertionError(_say(f"got an empty tensor of shape {tuple(x.shape)}", message))
    bad = ~torch.isfinite(x.detach())
    if bad.any():
        where = [int(i) for i in bad.nonzero()[0]]
        value = x.detach()[tuple(where)].item()
        raise AssertionError(
            _say(
                f"{int(bad.sum())} of {x.numel()} values are not finite; first at {where}: {value}",
                message,
            )
        )


def answer(got, shape, message: str = "", *, bound: float = 1e6) -> None:
    """Assert ``got`` is a usable answer before a test reasons about it: a plain floating
    tensor of ``shape``, every value finite and within ``bound`` in magnitude. Checks that
    compare the student's values with each other (invariances, self-consistency) pass
    vacuously on an empty, NaN or absurdly large answer; this gate comes first."""
    if type(got) is not torch.Tensor:
        raise AssertionError(_say(f"got {_kind(got)}, expected a tensor", message))
    if tuple(got.shape) != tuple(shape):
        raise AssertionError(
            _say(f"got shape {tuple(got.shape)}, expected {tuple(shape)}", message)
        )
    if not got.is_floating_point():
        raise AssertionError(_say(f"got dtype {got.dtype}, expected a floating dtype", message))
    all_finite(got, message)
    biggest = got.detach().abs().max().item() if got.numel() else 0.0
    if biggest > bound:
        raise AssertionError(
            _say(f"a value of magnitude {biggest:.3g} (more than {bound:g})", message)
        )


def all_true(mask, message: str = "", *, shape=None, empty_ok: bool = False) -> None:
    """Assert boolean tensor ``mask`` (a condition computed from the student's values) is
    true everywhere; it must have ``shape`` when given, and be non-empty unless
    ``empty_ok`` — a condition over no values shows nothing."""
    if type(mask) is not torch.Tensor or mask.dtype != torch.bool:
        raise AssertionError(_say(f"got {_kind(mask)}, expected a boolean tensor", message))
    if shape is not None and tuple(mask.shape) != tuple(shape):
        raise AssertionError(
            _say(f"the condition has shape {tuple(mask.shape)}, expected {tuple(shape)}", message)
        )
    if mask.numel() == 0 and not empty_ok:
        raise AssertionError(
            _say(f"the condition covers no values (shape {tuple(mask.shape)})", message)
        )
    if not bool(mask.all()):
        where = [int(i) for i in (~mask).nonzero()[0]]
        raise AssertionError(
            _say(
                f"false at {int((~mask).sum())} of {mask.numel()} positions; first at {where}",
                message,
            )
        )
