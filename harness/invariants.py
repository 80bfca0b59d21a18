"""Invariants of every call into the student's code, checked by the harness on each call.

Every function of a student's module that a test reaches through ``chapter_module`` —
from a test body with plain data, or inside a probe with live objects, in a student's
own pytest run and in the grader's split run alike — is called through ``checked``,
which holds the call to what any contract says unless it says otherwise:

- **arguments unchanged**: what the caller passed in (tensors by value and metadata,
  their ``.grad``, lists, dicts, sets, numpy arrays, modules' parameters, buffers,
  submodules and train/eval modes, optimizers' settings and state, dataclasses) is as it
  was after the call;
- **global state unchanged**: torch's, numpy's and Python's global random states, grad
  mode, default dtype, torch's thread count and algorithm flags, torch function modes,
  pyplot's figures and current figure and rcParams, the working directory, the
  environment, open files (a call that raises is reported by its error, and what it
  left is put back);
- **writes only where told**: no file appears or changes in the working directory or
  beside a path the call was given, except that path;
- **results are the call's own**: nothing in the result shares memory with, or is, an
  object the caller passed in, and no call hands out an object that an earlier call
  returned (a cache: editing one result would change another);
- **the signature is the contract's**: the function takes the stub's parameters, by the
  same names, in the same order, optional where the stub's are (``harness.signatures``);
- **results have the declared type**: the result is of the type the stub's signature
  declares, the fields of a returned named tuple or dataclass too (``harness.returns``).
- **any memory layout**: the first call of each input signature (shapes, dtypes, other
  values) is made again with its tensors holding the same values in another layout
  (transposed, strided: ``harness.layouts``), and must give the same result. Only calls
  that can be repeated unseen, and took at most ``RECALL_CPU_LIMIT_S`` of CPU (the
  re-calls count against the student's time limit), are: a pure call of plain data (no module, function,
  generator or tensor that needs its gradient among the arguments; no random draw); a
  method whose object the call left unchanged (a module's too, where no hook watches it
  and no test's module sits inside it), unless the contract says the result depends on
  layout;
- **the examples of a batch are independent**: where the contract declares batched
  parameters (``harness.contracts``), that first call is also made with only the last
  example of the batch, and must give the last row of the batch's result
  (``harness.batches``);
- **every value of a declared type is accepted**: that first call is also made with one
  argument at a time given as another member of the type its stub declares (a whole
  float as an int, a tuple for a list, a read-only mapping for a dict, an iterator for a
  list: ``harness.retyped``), wherever the call is plain data, and must give the same
  result;
- **the same result in train and eval mode**: a module's ``forward`` is also called with
  every submodule in the other mode and must agree, and draws no random numbers (no
  dropout), unless its contract declares batch statistics;
- **the caller's functions run in the caller's grad mode**: a function passed in (not a
  module, not the student's own) that the call runs only under ``no_grad`` while the
  caller had gradients on breaks the call (a training loop may still evaluate with it);
- **the same call gives the same result**: that second call (a plain repeat where no
  tensor can be laid out otherwise) differs, and so does a third with the very same
  arguments: the first call left something behind (a global counter, a mutable default
  argument) that changed the next. A call given an existing file is not repeated.

``harness.ownership`` checks the arguments and results, ``harness.globalstate`` the
global state and the files; ``harness.contracts`` lists the exceptions a task's contract
declares. A broken invariant raises ``Broken`` (an ``AssertionError``: the test fails,
naming the invariant, the object and what changed); it is also kept until the probe or
call that reached the student's code ends, so a probe that catches exceptions cannot
swallow it. Restorable global state (random states, modes, working directory,
environment) is put back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import itertools
import os
import sys
import types
import weakref
from time import process_time as _cpu_time  # bound here, before any student module loads

import torch

from harness import batches, contracts, layouts, returns, retyped, signatures
from harness.globalstate import (
    global_module_hooks,
    global_state,
    state_changes,
    watched_folders,
    written,
)
from harness.ownership import HANDOUTS, HOOKS, Owned, shared_with


class Broken(AssertionError):
    """A call into the student's code broke an invariant every call keeps."""


BROKEN_TYPE = f"{__name__}.Broken"  # how the student's process names it in an error report
_pending: list[Broken] = []  # broken invariants not yet reported (see module doc)


def take_pending() -> Broken | None:
    """The first invariant broken since the last call (and forget the rest)."""
    first = _pending[0] if _pending else None
    _pending.clear()
    return first


# ---- the checked call ------------------------------------------------------------------------

_signatures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _signature(fn) -> inspect.Signature | None:
    try:
        return _signatures[fn]
    except (KeyError, TypeError):
        pass
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    with contextlib.suppress(TypeError):  # not weakly referable: looked up each time
        _signatures[fn] = sig
    return sig


def _named(fn, args: tuple, kwargs: dict) -> list[tuple[str, object]]:
    sig = _signature(fn)
    if sig is not None:
        try:
            return list(sig.bind(*args, **kwargs).arguments.items())
        except TypeError:
            pass
    return [(f"argument {i + 1}", v) for i, v in enumerate(args)] + list(kwargs.items())


def _call_text(name: str, named: list[tuple[str, object]]) -> str:
    return f"{name}({', '.join(n for n, _ in named if n != 'self')})"


def _fail(text: str) -> Broken:
    err = Broken(text)
    _pending.append(err)
    return err


class Checked:
    """A student's function as the tests call it: the call itself, then the invariants.
    Pickles as the function (a DataLoader worker started by spawn gets the function)."""

    def __init__(self, fn, chapter: str, name: str) -> None:
        self.__wrapped__ = fn
        self._key = f"{chapter}.{name}"
        self._name = name
        self._allow = contracts.allowed(chapter, name)

    def __call__(self, *args, **kwargs):
        return call(self.__wrapped__, self._key, self._name, self._allow, args, kwargs)

    def __getattr__(self, attr: str):
        return getattr(self.__wrapped__, attr)

    def __reduce__(self):
        return (_unwrapped, (self.__wrapped__,))

    def __repr__(self) -> str:
        return f"<checked {self.__wrapped__!r}>"


def _unwrapped(fn):
    return fn


def checked(value, chapter: str, name: str):
    """``value`` as the tests reach it: a function (anything callable but a class) is
    called through the invariants; a class of the student's module has its public
    methods (and ``forward``) checked, for every instance; any other value is as is."""
    _instrument_module(getattr(value, "__module__", None), chapter)
    if isinstance(value, type):
        if value.__module__.startswith(f"{chapter}."):
            _instrument(value, chapter)
        return value
    if callable(value) and not isinstance(value, Checked):
        return Checked(value, chapter, name)
    return value


_INSTRUMENTED: weakref.WeakSet = weakref.WeakSet()  # student modules whose classes are checked


def _instrument_module(name, chapter: str) -> None:
    """Check the methods of every class the student's module defines, also of those the
    tests meet only as a result's type (``fit_normalizer`` returns a ``Normalizer``)."""
    if not isinstance(name, str) or not name.startswith(f"{chapter}."):
        return
    module = sys.modules.get(name)
    if module is None or module in _INSTRUMENTED:
        return
    _INSTRUMENTED.add(module)
    for value in list(vars(module).values()):
        if isinstance(value, type) and value.__module__ == name:
            _instrument(value, chapter)


_MARK = "_course_invariants_checked"


def _instrument(cls: type, chapter: str) -> None:
    """Check every call of ``cls``'s public methods made from outside the student's code
    (a method a method calls is not checked again). ``self`` is the method's own: only
    its other arguments must stay unchanged. A module's ``forward`` may draw random
    numbers (dropout)."""
    if cls.__dict__.get(_MARK) or not contracts.allowed(chapter, cls.__name__).methods:
        return
    for attr, value in list(vars(cls).items()):
        if attr.startswith("_") or not isinstance(value, types.FunctionType):
            continue
        allow = contracts.allowed(chapter, f"{cls.__name__}.{attr}")
        if attr == "forward" and issubclass(cls, torch.nn.Module):
            allow = dataclasses.replace(allow, state=allow.state | {"random"})
        setattr(cls, attr, _method(value, f"{chapter}.{cls.__name__}.{attr}", allow))
    setattr(cls, _MARK, True)


def _method(fn, key: str, allow: contracts.Allow):
    name = key.partition(".")[2]

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if _active[0] or torch.compiler.is_compiling():
            return fn(self, *args, **kwargs)
        return call(fn, key, name, allow, (self, *args), kwargs)

    return method


def _in_worker() -> bool:
    data = sys.modules.get("torch.utils.data")
    info = getattr(data, "get_worker_info", None)
    return info is not None and info() is not None


@contextlib.contextmanager
def _unseen():
    """The checks' own torch calls, out of sight of the torch function and dispatch modes
    a probe may have set up to watch the student's calls."""
    from torch.utils._python_dispatch import _disable_current_modes

    with torch._C.DisableTorchFunction(), _disable_current_modes():
        yield


_active = [0]  # > 0 while a checked call runs: the calls it makes are its own business


def call(fn, key: str, name: str, allow: contracts.Allow, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)`` with every invariant checked (see module doc)."""
    if _active[0]:
        return fn(*args, **kwargs)
    _active[0] += 1
    try:
        return _checked_call(fn, key, name, allow, args, kwargs)
    finally:
        _active[0] -= 1


def _checked_call(fn, key, name, allow, args, kwargs):
    differs = signatures.mismatch(key, fn)
    if differs:
        raise _fail(
            f"{name}'s parameters are not the exercise's {name}{signatures.declared_text(key)}: "
            f"{differs}. Keep "
            "the exercise's parameter names, order and defaults: callers pass arguments by "
            "name (invariant: the signature is the contract's)"
        )
    with _unseen():
        named = _named(fn, args, kwargs)
        owned = Owned([(n, v) for n, v in named if n != "self"])
        state = global_state()
        # a DataLoader worker shares the folders with its siblings: files are the main
        # process's to check
        folders = {} if _in_worker() else watched_folders(owned.paths)
    states = allow.state
    if allow.generator and dict(named).get(allow.generator) is not None:
        states = states - {"random"}  # given a generator, it draws from that one only
    with _unseen():
        again = _layout_plan(key, allow, states, named, args, kwargs)
    modes: dict[str, set[bool]] = {}  # the caller's functions -> the grad modes they ran in
    given, given_kw = (
        _watched_all(named, args, kwargs, modes) if allow.callbacks else (args, kwargs)
    )
    started = _cpu_time()
    try:
        result = fn(*given, **given_kw)
    except (NotImplementedError, Broken):
        raise
    except BaseException:
        # Its own error is the report (what it left behind is most often that error's
        # consequence: a figure it did not get to close); put back what it left.
        with _unseen():
            state_changes(state, states)
        off = _grad_off(name, named, modes)
        if off:  # the likelier cause of the error: say it
            raise off from None
        raise
    off = _grad_off(name, named, modes)
    if off:
        raise off
    with _unseen():
        _after(key, name, allow, states, named, owned, state, folders, result)
        declared = returns.result_mismatch(key, result, getattr(fn, "__globals__", {}))
    if declared:
        annotation, where = declared
        raise _fail(
            f"{_call_text(name, named)} returned a value of another type than its contract "
            f"declares: {where} (the stub's signature says `-> {annotation}`); return that "
            "type (a number from a one-element tensor or a numpy value: .item(); a tuple: "
            "tuple(...)) "
            "(invariant: results have the declared type)"
        )
    if again is not None and _cpu_time() - started <= RECALL_CPU_LIMIT_S:
        _same_in_any_layout(fn, name, named, states, state, again, args, kwargs, result)
    return result


def _watched_all(named, args, kwargs, modes: dict[str, set[bool]]):
    """``args`` and ``kwargs`` with each function the caller passed (not a module, not the
    student's own) wrapped to note in ``modes`` whether gradients were on at each of its
    calls. Only a function never run with them on, while the caller had them on, breaks
    the invariant (a training loop may evaluate with the same function under no_grad)."""
    if not torch.is_grad_enabled():
        return args, kwargs
    names = [n for n, _ in named if n not in kwargs]  # the positional ones, in order

    def watch(value, where):
        if isinstance(value, Checked) or not isinstance(
            value, types.FunctionType | types.MethodType | functools.partial
        ):
            return value

        @functools.wraps(value)
        def watched(*a, **k):
            modes.setdefault(where, set()).add(torch.is_grad_enabled())
            return value(*a, **k)

        return watched

    new_args = tuple(
        watch(v, names[i] if i < len(names) else f"argument {i + 1}") for i, v in enumerate(args)
    )
    return new_args, {k: watch(v, k) for k, v in kwargs.items()}


_CALLBACK_LESSON = (
    "a function the caller passes in runs as the caller would run it: under torch.no_grad() "
    "(or inference_mode) its tensors record no graph, so a backward pass, a gradient or a "
    "grad_fn it needs is gone; leave the grad mode to the caller (invariant: the caller's "
    "functions run in the caller's grad mode)"
)


def _grad_off(name, named, modes: dict[str, set[bool]]) -> Broken | None:
    """The failure of a call that ran a caller's function only with gradients off (None
    if it ran none that way)."""
    off = [where for where, seen in modes.items() if seen == {False}]
    if not off:
        return None
    which = ", ".join(f"`{w}`" for w in off)
    return _fail(
        f"{_call_text(name, named)} called {which} only with gradients off, while its caller "
        f"had them on: {_CALLBACK_LESSON}"
    )


_LAYOUT_SIGNATURES: set = set()  # (task, input signature) already re-called in another layout
# A call that took more CPU than this is not made again: the re-calls count against the
# student's time limit, and a slow correct call must not time out for the checks' sake.
RECALL_CPU_LIMIT_S = 0.3


def _input_key(x, depth: int = 0):
    if isinstance(x, torch.Tensor):
        return ("tensor", tuple(x.shape), x.dtype, x.device.type, x.requires_grad)
    if isinstance(x, bool | int | str | type(None)) and len(repr(x)) < 80:
        return x
    if depth < 2 and type(x) in (list, tuple):
        return (type(x).__name__, *(_input_key(v, depth + 1) for v in x))
    if depth < 2 and type(x) is dict:
        return ("dict", *((repr(k), _input_key(v, depth + 1)) for k, v in x.items()))
    return type(x).__qualname__


def _layout_plan(key, allow, states, named, args, kwargs):
    """What the layout, batch and declared-type invariants will call again after this
    call (see module doc): the arguments re-laid out, the last example alone, the
    arguments retyped, and the method's object as it was; None when nothing."""
    if allow.changes or _in_worker():
        return None
    owner = dict(named).get("self")
    module = isinstance(owner, torch.nn.Module)
    if module and not _unwatched(owner, key.partition(".")[0]):
        return None
    if "random" in states and not module:
        return None  # (a module's methods may draw: a call that did is not made again)
    plain = args[1:] if owner is not None else args
    plain, kwargs = layouts.reseeded(plain, kwargs)  # a generator: as it was before the call
    signature = (key, _input_key(plain), _input_key(kwargs))
    if signature in _LAYOUT_SIGNATURES or len(_LAYOUT_SIGNATURES) > 10_000:
        return None
    _LAYOUT_SIGNATURES.add(signature)
    names = [n for n, _ in named if n != "self"]
    plan = layouts.relaid_all(plain, kwargs, names) if allow.layouts else []
    alone, other_types = None, []
    if layouts.relaid(plain, kwargs, names) is not None:  # plain data only
        # a module that uses its batch's statistics in training (modes) batches only in eval
        if allow.batch and not (allow.modes and module and owner.training):
            alone = batches.last_alone(plain, kwargs, names, allow.batch, allow.batch_from)
        other_types = retyped.variants(key, plain, kwargs, names)
    modes = module and key.endswith(".forward") and not allow.modes
    if not plan and alone is None and not other_types and not modes:
        return None
    plan = (plan, other_types, modes, ((owner, *plain) if owner is not None else plain, kwargs))
    if owner is None:
        return plan, alone, None, None
    if module:  # its parameters, buffers and modes, and every submodule's plain attributes
        parts = [("self", owner)] + [
            (f"self.{n}" if n else "self", {k: v for k, v in vars(m).items() if k[0] != "_"})
            for n, m in owner.named_modules()
        ]
        return plan, alone, Owned(parts), torch.get_rng_state()
    # a plain object's attributes are its __dict__ (Owned walks dicts, not objects)
    return plan, alone, Owned([("self", getattr(owner, "__dict__", owner))]), None


def _unwatched(model: torch.nn.Module, chapter: str) -> bool:
    """Whether a module's method can be called once more unseen: no hook anywhere (a
    probe's hooks count calls), only torch's and the student's own submodules (a test's
    module counts its calls), all on the CPU (whose generator tells whether it drew)."""
    if any(global_module_hooks()):
        return False
    for m in model.modules():
        hooked = any(getattr(m, table) for table in HOOKS)
        ours = type(m).__module__.startswith(("torch.", f"{chapter}."))
        tensors = itertools.chain(m._parameters.values(), m._buffers.values())
        if hooked or not ours or any(t is not None and t.device.type != "cpu" for t in tensors):
            return False
    return True


def _same_in_any_layout(fn, name, named, states, state, again, args, kwargs, result) -> None:
    (plans, other_types, modes, (args, kwargs)), alone, owner, generator = again
    if any(isinstance(v, str) and os.path.exists(v) for _, v in named):
        return  # it was given a file: calling it again could find its own output there
    if owner is not None:
        with _unseen():
            if owner.changes(frozenset()):
                return  # the method changed its object: a second call is not the same call
            if generator is not None and not torch.equal(generator, torch.get_rng_state()):
                if modes:
                    mode = "training" if args[0].training else "eval"
                    raise _fail(
                        f"{_call_text(name, named)} drew random numbers in {mode} mode (a "
                        f"dropout?): {_MODES_LESSON}"
                    )
                return  # it drew random numbers: a second call draws others
    kept = _attributes(args[0]) if owner is not None else []
    try:
        if modes:
            _same_in_either_mode(fn, name, named, states, state, (args, kwargs, result))
        for plan in plans:
            _same_in_layout(fn, name, named, states, state, plan, (args, kwargs, result))
        if alone is not None:
            _same_row_alone(fn, name, named, states, state, alone, (args, kwargs, result))
        for other in other_types:
            _same_when_retyped(fn, name, named, states, state, other, (args, kwargs, result))
    finally:  # what the first call left in its object is what the caller sees
        for obj, attributes in kept:
            vars(obj).clear()
            vars(obj).update(attributes)


def _attributes(owner) -> list[tuple[object, dict]]:
    """The attributes of a method's object (of each of a module's submodules), as bound now."""
    objects = owner.modules() if isinstance(owner, torch.nn.Module) else [owner]
    return [(o, dict(vars(o))) for o in objects if hasattr(o, "__dict__")]


_LAYOUT_LESSON = (
    "a transposed, sliced or channels-last tensor is as valid an input as a contiguous one: "
    ".view needs memory that fits the new shape (.reshape and .flatten copy when they must), "
    "and .numpy(), .storage() or .data_ptr() see memory, not values (invariant: the same "
    "values in any memory layout give the same result)"
)
_REPEAT_LESSON = (
    "something the first call left behind (a global, a mutable default argument, a cache, "
    "a counter, an attribute) changed the second; a result may depend only on the "
    "arguments (invariant: the same call gives the same result)"
)


def _call_again(fn, args, kwargs, state, states, first, compare=None) -> str | None:
    """What differs when ``fn`` is called again (None if nothing): its error or where its
    result differs from ``first`` (by ``compare``, else as the same values should not).
    Unseen by probes; global state is put back after."""
    args, kwargs = layouts.fresh(args, kwargs)
    with _unseen():
        try:
            other = fn(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - any error here is the student's to see
            return f"it raised {type(err).__name__} ({str(err)[:300]})"
        finally:
            state_changes(state, states)  # a second call leaves no more than the first
        if compare is not None:
            return compare(first, other)
        differs = layouts.difference(first, other)
    return f"it gave another result ({differs})" if differs else None


def _fail_if_not_repeatable(fn, name, named, states, state, call) -> None:
    """Fail the repeat invariant where the very call ``call`` (its args, kwargs and result)
    gives another result when made again: a variant's difference then says nothing about
    the variant."""
    args, kwargs, result = call
    if _call_again(fn, args, kwargs, state, states, result):
        raise _fail(
            f"{_call_text(name, named)}, called again with the same arguments: it gave "
            f"another result: {_REPEAT_LESSON}"
        )


def _same_in_layout(fn, name, named, states, state, plan, call) -> None:
    args, kwargs, result = call
    method = dict(named).get("self") is not None

    def laid(p):  # the arguments of a call laid out as ``p`` says
        return ((args[0], *p.args) if method else p.args), p.kwargs

    text = _call_text(name, named)

    def beyond_rounding(first, other):  # the inputs' size bounds what rounding can do
        found = layouts.difference(first, other)
        if found:
            found = layouts.difference(first, other, inputs=layouts.largest_input(args, kwargs))
        return f"it gave another result ({found})" if found else None

    differs = _call_again(fn, *laid(plan), state, states, result, beyond_rounding)
    if differs is None:
        return
    if plan.where is None or _call_again(fn, args, kwargs, state, states, result):
        raise _fail(f"{text}, called again with the same arguments: {differs}: {_REPEAT_LESSON}")
    where = plan.where
    if plan.moved > 1:  # name the argument whose layout matters, where one alone does
        plain = args[1:] if method else args
        names = [n for n, _ in named if n != "self"]
        for k in range(plan.moved):
            one = layouts.relaid(plain, kwargs, names, plan.images, only=k)
            alone = one and _call_again(fn, *laid(one), state, states, result, beyond_rounding)
            if alone:
                where, differs = one.where, alone
                break
    raise _fail(f"{text} works on contiguous tensors, but when {where} {differs}: {_LAYOUT_LESSON}")


_BATCH_LESSON = (
    "each example of a batch is computed on its own: a statistic taken over the batch "
    "dimension, a squeeze() that also drops a batch of one, a reshape that mixes examples, "
    "or work done on the first example only makes one example's answer depend on the rest "
    "of its batch (invariant: the examples of a batch are independent)"
)


def _same_row_alone(fn, name, named, states, state, alone, call) -> None:
    args, kwargs, result = call
    cut = (args[0], *alone.args) if dict(named).get("self") is not None else alone.args

    def row(first, other):
        return batches.row_difference(first, other, alone.size)

    differs = _call_again(fn, cut, alone.kwargs, state, states, result, row)
    if differs is None:
        return
    _fail_if_not_repeatable(fn, name, named, states, state, call)
    raise _fail(
        f"{_call_text(name, named)} on a batch of {alone.size} and on its last example alone "
        f"(only the last row of {alone.where}, a batch of one) disagree: {differs}: "
        f"{_BATCH_LESSON}"
    )


_MODES_LESSON = (
    "a module whose contract has no dropout and no batch statistics computes the same "
    "function in training and in eval mode: model.eval() must not change its output, and "
    "nothing in its forward may depend on self.training or draw random numbers "
    "(invariant: the same result in train and eval mode)"
)


def _same_in_either_mode(fn, name, named, states, state, call) -> None:
    """A module's forward called again with every submodule in the other mode."""
    args, kwargs, result = call
    model = args[0]
    modes = [(m, m.training) for m in model.modules()]
    before = "training" if model.training else "eval"
    try:
        with _unseen():
            model.train(not model.training)
        differs = _call_again(fn, args, kwargs, state, states, result)
    finally:
        for m, training in modes:
            m.training = training
    if differs is None:
        return
    _fail_if_not_repeatable(fn, name, named, states, state, call)
    other = "eval" if before == "training" else "training"
    raise _fail(
        f"{_call_text(name, named)} in {before} mode and in {other} mode disagree: in {other} "
        f"mode {differs}: {_MODES_LESSON}"
    )


_RETYPED_LESSON = (
    "a parameter takes every value of the type its stub declares, not only the kind the "
    "examples pass: a `float` takes an int (1 as well as 1.0), a `Sequence` a tuple as well "
    "as a list, a `Mapping` any mapping (not only a dict), an `Iterable` an iterator that "
    "can be walked only once; convert what you rely on (float(x), list(xs), dict(m)) "
    "(invariant: every value of the declared type is accepted)"
)


def _same_when_retyped(fn, name, named, states, state, other, call) -> None:
    args, kwargs, result = call
    given = (args[0], *other.args) if dict(named).get("self") is not None else other.args

    def same(first, then):
        differs = layouts.difference(first, then, numbers=True)
        return f"it gave another result ({differs})" if differs else None

    differs = _call_again(fn, given, other.kwargs, state, states, result, same)
    if differs is None:
        return
    _fail_if_not_repeatable(fn, name, named, states, state, call)
    raise _fail(
        f"{_call_text(name, named)} works as called, but with {other.where} {differs}: "
        f"{_RETYPED_LESSON}"
    )


def _after(key, name, allow, states, named, owned, state, folders, result) -> None:
    text = _call_text(name, named)
    changed = state_changes(state, states)
    if changed:
        what, detail, why = changed[0]
        raise _fail(
            f"{text} changed {what} ({detail}) and did not put it back: {why} "
            "(invariant: global state unchanged)"
        )
    change = owned.changes(allow.changes)
    if change:
        param, where, what = change
        lesson = (
            f"it may set the values of {param}'s parameters and buffers, nothing else of it"
            if f"{param}.values" in allow.changes
            else "a function that only reads its input must not write to it"
        )
        raise _fail(
            f"{text} changed its argument {where} ({what}): {lesson} "
            "(invariant: arguments unchanged)"
        )
    wrote = written(folders, owned.paths)
    if wrote:
        folder, file = wrote
        given = ", ".join(str(p) for p in owned.paths) or "no path"
        raise _fail(
            f"{text} wrote {file!r} in {folder}, which it was not given (it was given "
            f"{given}): write exactly the path you are given, nowhere else "
            "(invariant: writes only where told)"
        )
    shared = shared_with(result, owned, allow.aliases)
    if shared:
        where, arg = shared
        raise _fail(
            f"{text} returned {where}, which is (or shares memory with) its argument {arg}: "
            "editing the result would change the caller's data; return objects of your own "
            "(.clone(), list(...)) (invariant: results are the call's own)"
        )
    if not allow.repeats:
        again = HANDOUTS.repeated(key, result, owned)
        if again:
            raise _fail(
                f"{text} returned {again}, which an earlier call also returned (the same "
                "object or memory): editing one call's result changes another's; build a "
                "new one on every call (invariant: results are the call's own)"
            )
