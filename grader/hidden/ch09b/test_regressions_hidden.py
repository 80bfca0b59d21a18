"""Hidden tests for ch09b: other objects, configurations, seeds and noise levels than the
public ones. Messages state the violated property, not the test."""

import copy
import itertools
import math
import random
import re
from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pytest
import torch
from torch import nn

from exercises.ch09b.test_regressions import (  # helpers shared with the public twin
    Run,
    bits,
    book_data,
    book_init,
    entries,
    named_step,
    run_of,
    runs,
    same_state,
    sample,
    verdict,
    visits_of,
    watched_run,
)
from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module, reference_module

try:  # trusted-side helpers; a graded run's student process has only harness.probe/target
    from harness.evidence import brief, first_difference
    from harness.generated import examples, given, st
except ImportError:  # there the probes below never need them
    pass

rg = chapter_module("ch09b", "regressions")
ref = reference_module("ch09b", "regressions")

PROBES_USE = (
    "SeedTable as_mapping watched_run"  # what the probes use besides themselves (harness/strip.py)
)

HIDDEN = dict(n=96, d_in=6, hidden=12, lr=0.08, epochs=2, batch_size=16, data_seed=77)


def hidden_config(**changes):
    return {**HIDDEN, **changes}


# ---------------------------------------------------------------- ch09b.1


@probe
def digests_of_autograd_tensors(seed):
    """fingerprint of tensors that require grad (a Parameter, a list of a model's
    parameters, a non-leaf result) beside detached copies of them, and of a dict holding one
    tensor under two keys (tied weights) beside one holding two equal copies."""
    torch.manual_seed(seed)
    p = nn.Parameter(torch.randn(5))
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    params = list(model.parameters())
    product = p * 2
    tied = torch.randn(4)
    fp = rg.fingerprint
    return {
        "a Parameter": (fp(p), fp(p.detach().clone())),
        "tied": (fp({"embed": tied, "head": tied}), fp({"embed": tied, "head": tied.clone()})),
        "a list of a model's parameters": (fp(params), fp([q.detach().clone() for q in params])),
        "a non-leaf tensor": (fp(product), fp(product.detach().clone())),
        "other values": (fp(p.detach() + 1), fp(product.detach() + 1)),
    }


@pytest.mark.task("ch09b.1")
def test_fingerprint_ignores_layout_and_autograd_flags():
    """Equal values give equal fingerprints whether or not a tensor requires grad, and
    whether or not one tensor is met twice."""
    with because(
        "fingerprint raised on a tensor that requires grad: detach it before reading its bytes"
    ):
        pairs = digests_of_autograd_tensors(4)
    other = pairs.pop("other values")
    digest = pairs["a Parameter"][0]
    assert type(digest) is str and digest not in other, (  # a constant is stable vacuously
        f"fingerprint gave {brief(digest)} for a Parameter and {brief(other[0])} for other "
        "values: a fingerprint is a digest string that changes with the values"
    )
    a, b = pairs.pop("tied")
    assert a == b, (
        "a dict holding one tensor under two keys (tied weights) and one holding two equal "
        "copies got different fingerprints: equal values give equal digests whatever the "
        "objects' identity, so a tensor met a second time is hashed by its values again"
    )
    for what, (a, b) in pairs.items():
        assert a == b, (
            f"{what} and a detached copy of it got different fingerprints: requires_grad is not "
            "part of the value"
        )
    nested = {"w": [torch.ones(2), torch.zeros(2)], "step": torch.tensor(3)}
    twin = {"w": [torch.ones(2), torch.zeros(2)], "step": torch.tensor(3)}
    assert rg.fingerprint(nested) == rg.fingerprint(twin), (
        "equal nested containers of tensors must have equal fingerprints"
    )


# eight bytes of zeros in dtypes with no numpy twin or few CPU operators, built where
# fingerprint runs (the probes' wire carries no float8): (dtype name, values)
EXOTIC_ZEROS = [
    ("float8_e4m3fn", [0.0] * 8),
    ("float8_e5m2", [0.0] * 8),
    ("complex64", [0.0]),
    ("uint16", [0.0] * 4),
    ("uint32", [0.0] * 2),
]
EXOTIC_CHANGED = [("float8_e4m3fn", [0.5, 1.0, 2.0]), ("float8_e4m3fn", [0.5, 1.0, 3.0])]


@probe
def fingerprints_in_dtypes(cases):
    """fingerprint of torch.tensor(values).to(dtype) for each (dtype name, values)."""
    return [rg.fingerprint(torch.tensor(values).to(getattr(torch, name))) for name, values in cases]


@pytest.mark.task("ch09b.1")
def test_fingerprint_sees_keys_order_and_narrow_dtypes():
    """Renamed keys (1 versus '1' too), values moved between keys, list order, 0-d versus
    1-element, and same-byte tensors of other dtypes or shapes all change the fingerprint,
    shapes whose sizes run together read alike ((1, 11) and (11, 1)) and lists grouping the
    same tensors otherwise included; so do int keys of any size, string keys whose text
    spells out a nested dict, and lists, tuples and dicts (empty ones too) nested otherwise;
    equal values held in another dtype (bfloat16 against float32, int8 against int64) too.
    A dict keyed by both ints and strings is hashed like any other. Every digest is a SHA-256 hex digest (64 lowercase hex characters)."""
    sd = {"a.weight": torch.ones(2, 2), "b.weight": torch.ones(2, 2)}
    renamed = {"a.weight": torch.ones(2, 2), "c.weight": torch.ones(2, 2)}
    assert rg.fingerprint(sd) != rg.fingerprint(renamed), (
        "a renamed state-dict key must change the fingerprint"
    )
    moved = {"a.weight": torch.zeros(2), "b.weight": torch.ones(2)}
    back = {"a.weight": torch.ones(2), "b.weight": torch.zeros(2)}
    assert rg.fingerprint(moved) != rg.fingerprint(back), (
        "swapping the tensors of two keys must change the fingerprint: hash each key with its value"
    )
    assert rg.fingerprint({1: torch.ones(2)}) != rg.fingerprint({"1": torch.ones(2)}), (
        "a dict keyed by the int 1 and one keyed by the string '1' got the same fingerprint: "
        "they are different keys; hash a key with its type, not its text alone"
    )
    with because(
        "fingerprint raised on a dict keyed by both an int and a str ({0: ..., 'step': ...}, "
        "as a hand-made checkpoint may be): Python cannot order keys of different types, so "
        "sorted() raises on them; hash the items in their order, or sort by something every "
        "key has (its type's name, then its repr)"
    ):
        mixed = [
            rg.fingerprint({0: torch.ones(2), "step": torch.zeros(1)}),
            rg.fingerprint({0: torch.ones(2), "step": torch.zeros(1)}),
            rg.fingerprint({1: torch.ones(2), "step": torch.zeros(1)}),
        ]
    assert_digests_apart(
        [("0", "{0: t, 'step': t}"), ("0", "its equal copy"), ("1", "{1: t, 'step': t}")],
        mixed,
        lambda name, other, _: f"{name} and {other} got one fingerprint: a changed key changes it",
    )
    assert mixed[0] == mixed[1], (
        "two equal dicts keyed by an int and a str ({0: t, 'step': t}) got different "
        "fingerprints: equal keys and values give equal digests"
    )
    a, b = torch.zeros(3), torch.ones(3)
    assert rg.fingerprint([a, b]) != rg.fingerprint([b, a]), (
        "the order of the tensors in a list must change the fingerprint"
    )
    same_bytes = {
        "float16 zeros(4)": torch.zeros(4, dtype=torch.float16),
        "bfloat16 zeros(4)": torch.zeros(4, dtype=torch.bfloat16),
        "int16 zeros(4)": torch.zeros(4, dtype=torch.int16),
        "float32 zeros(2)": torch.zeros(2, dtype=torch.float32),
        "int8 zeros(8)": torch.zeros(8, dtype=torch.int8),
        "uint8 zeros(8)": torch.zeros(8, dtype=torch.uint8),
        "bool zeros(8)": torch.zeros(8, dtype=torch.bool),
        "float32 zeros(1, 2)": torch.zeros(1, 2),
        "float32 zeros(2, 1)": torch.zeros(2, 1),
    }
    with because(
        "fingerprint raised on a tensor of a narrow dtype (bfloat16, float8, uint16, complex64, "
        "bool, ...): not every dtype has a numpy twin, but every tensor can be viewed as bytes "
        "(t.view(torch.uint8))"
    ):
        digests = {what: rg.fingerprint(t) for what, t in same_bytes.items()}
        *zeros, before, after = fingerprints_in_dtypes(EXOTIC_ZEROS + EXOTIC_CHANGED)
    digests |= {f"{name} zeros({len(values)})": d for (name, values), d in zip(EXOTIC_ZEROS, zeros)}
    assert before != after, (
        "float8 tensors [0.5, 1.0, 2.0] and [0.5, 1.0, 3.0] got one fingerprint: hash every "
        "byte of every dtype"
    )
    clashes = [
        (x, y)
        for i, x in enumerate(digests)
        for y in list(digests)[i + 1 :]
        if digests[x] == digests[y]
    ]
    assert not clashes, (
        f"tensors holding the same bytes in another dtype or shape got one fingerprint: {clashes[:3]}"
    )
    assert rg.fingerprint(torch.tensor(3.0)) != rg.fingerprint(torch.tensor([3.0])), (
        "a 0-d tensor and a 1-element tensor of the same value differ in shape: their fingerprints must too"
    )
    empties = [torch.zeros(0), torch.zeros(0, 3), torch.zeros(0, dtype=torch.int64)]
    with because("fingerprint raised on an empty tensor"):
        empty_digests = {rg.fingerprint(t) for t in empties}
    assert len(empty_digests) == 3, (
        "empty tensors of shapes (0,), (0, 3) and int64 (0,) must get three different fingerprints"
    )
    big = torch.randn(50, 50)
    changed = big.clone()
    changed[25, 25] += 1e-3
    assert rg.fingerprint(big) != rg.fingerprint(changed), (
        "a small change of one value in a large tensor must change the fingerprint"
    )
    assert_framed()
    assert_containers_framed()
    assert_keys_read_back_one_way()
    assert_equal_values_in_every_dtype_apart()


DTYPES = [
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int8,
    torch.uint8,
    torch.bool,
]


def changed_at(t, k):
    """t with its k-th element (flat, row-major) changed to another value of its dtype."""
    out = t.clone().reshape(-1)
    if t.dtype == torch.bool:
        out[k] = ~out[k]
    else:
        out[k] = out[k] + 1
    return out.reshape(t.shape)


@pytest.mark.task("ch09b.1")
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
def test_fingerprint_sees_a_change_anywhere_in_any_dtype(dtype):
    """Changing any single element (first, middle, last) of a tensor of any dtype changes its
    fingerprint; an equal copy keeps it."""
    g = torch.Generator().manual_seed(3)
    t = (torch.rand(37, 29, generator=g) * 50).to(dtype)
    with because(f"fingerprint raised on a {dtype} tensor"):
        fp = rg.fingerprint(t)
        assert rg.fingerprint(t.clone()) == fp, (
            f"an equal copy of a {dtype} tensor got another fingerprint"
        )
        for k in (0, t.numel() // 2, t.numel() - 1):
            assert rg.fingerprint(changed_at(t, k)) != fp, (
                f"changing element {k} of {t.numel()} of a {dtype} (37, 29) tensor left the "
                "fingerprint unchanged: hash every byte of the data"
            )


EVERY_DTYPE = [
    torch.float64,
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
]
SAME_WIDTH_INT = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}


def hard_values(dtype):
    """Values of ``dtype`` that a detour through another dtype cannot keep apart from their
    neighbours: the ends of its range, integers past float32's 24 and float64's 53 bits of
    mantissa, the smallest normal and a subnormal float."""
    if dtype == torch.bool:
        return torch.tensor([False, True, True])
    if dtype.is_floating_point:
        fi = torch.finfo(dtype)
        values = [1.0, -2.5, 3.0, fi.max, -fi.max, fi.smallest_normal, fi.smallest_normal / 4]
        return torch.tensor(values, dtype=torch.float64).to(dtype)
    ii = torch.iinfo(dtype)
    values = [ii.max - 1, ii.min, 7] + ([-3] if ii.min < 0 else [])
    values += [v for v in (2**24, 2**53, 2**62) if v < ii.max]
    return torch.tensor(values, dtype=dtype)


def next_value(t, k):
    """t with element k moved to a neighbouring value of its dtype (its bit pattern plus
    one): the smallest change a value can undergo."""
    out = t.clone()
    if t.dtype == torch.bool:
        out[k] = ~out[k]
        return out
    bits = out.view(SAME_WIDTH_INT[t.element_size()])
    bits[k] += 1
    return out


@pytest.mark.task("ch09b.1")
def test_fingerprint_sees_the_smallest_change_of_any_value():
    """In every dtype, moving one value to its nearest neighbour changes the fingerprint, at the
    ends of the range and past float32's and float64's mantissas too."""
    for dtype in EVERY_DTYPE:
        t = hard_values(dtype)
        with because(f"fingerprint raised on a {dtype} tensor of extreme values"):
            fp = rg.fingerprint(t)
            same = [k for k in range(t.numel()) if rg.fingerprint(next_value(t, k)) == fp]
        assert not same, (
            f"fingerprint({t.tolist()}, dtype={dtype}) did not change when element {same[0]} "
            f"became {next_value(t, same[0])[same[0]].item()!r}, its neighbour in {dtype}: hash "
            "the tensor's own bytes (a detour through float64 or float32 rounds large integers "
            "and close floats to one value)"
        )


def leaf(rng, dtype=None):
    """A small tensor whose float values printing cannot tell from their neighbours (1.00001
    in float32)."""
    shape = rng.choice([(), (1,), (3,), (2, 3), (3, 2), (0,), (2, 0)])
    dtype = dtype or rng.choice([torch.float32, torch.float64, torch.int64, torch.int32])
    values = torch.tensor(
        [rng.randint(-5, 5) + 1.00001 for _ in range(math.prod(shape))], dtype=torch.float64
    )
    if not dtype.is_floating_point:
        values = values * 2**20
    return values.reshape(shape).to(dtype)


# Python values a state dict holds beside its tensors (an optimizer's 'foreach': None,
# 'nesterov': False, 'lr': 0.01, a scheduler's mode string, LambdaLR's [None] for its lambdas)
PYTHON_LEAVES = (None, True, False, 0, 1, 2.5, -0.0, 1e-300, "w", "")


def tree(rng, depth, values=False):
    """A nested list/tuple/dict of tensors to depth 4 (with ``values``, of Python values too)."""
    kinds = ["tensor", "list", "tuple", "dict"] + (["value", "value"] if values else [])
    kind = rng.choice(kinds if depth < 4 else ["tensor"])
    if kind == "tensor":
        return leaf(rng)
    if kind == "value":
        return rng.choice(PYTHON_LEAVES)
    if kind in ("list", "tuple"):
        items = [tree(rng, depth + 1, values) for _ in range(rng.randint(1, 3))]
        return items if kind == "list" else tuple(items)
    keys = rng.sample(["w", "b", "0.weight", "0.bias", "layer.1"], rng.randint(1, 3))
    return {k: tree(rng, depth + 1, values) for k in keys}


def changed_value(rng, value):
    """A Python leaf changed: None to False, 0 or "None"; a bool flipped; a number to its
    neighbour; a string extended."""
    if value is None:
        return rng.choice([False, 0, "None"])
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return math.nextafter(value, math.inf)
    return value + "_"


def reordered(rng, seq):
    """seq with two neighbouring items that differ swapped, or else one item dropped. The
    reference's digests tell which items differ."""
    digests = [ref.fingerprint(item) for item in seq]
    swaps = [k for k in range(len(seq) - 1) if digests[k] != digests[k + 1]]
    items = list(seq)
    if swaps and rng.random() < 0.6:
        k = rng.choice(swaps)
        items[k], items[k + 1] = items[k + 1], items[k]
    else:
        del items[rng.randrange(len(items))]
    return type(seq)(items)


def mutated(rng, obj, reorder=False):
    """obj with one change somewhere inside: a value moved to its neighbour in its dtype, a
    dtype, a shape or a key (with ``reorder``, also a Python value changed, two items of a
    list or tuple swapped, or one dropped)."""
    if reorder and not isinstance(obj, (torch.Tensor, list, tuple, dict)):
        return changed_value(rng, obj)
    if reorder and isinstance(obj, (list, tuple)) and rng.random() < 0.4:
        return reordered(rng, obj)
    if isinstance(obj, torch.Tensor):
        change = rng.choice(["value", "value", "dtype", "shape"])
        if change == "value" and obj.numel():
            return next_value(obj.reshape(-1), rng.randrange(obj.numel())).reshape(obj.shape)
        if change == "dtype":
            other = torch.float64 if obj.dtype != torch.float64 else torch.float32
            return obj.to(other)
        if change == "shape" and obj.numel() > 1:
            return obj.reshape(-1) if obj.dim() != 1 else obj.reshape(1, -1)
        return torch.cat([obj.reshape(-1), obj.new_ones(1)])  # one more element
    if isinstance(obj, (list, tuple)):
        k = rng.randrange(len(obj))
        inner = mutated(rng, obj[k], reorder)
        return type(obj)([*obj[:k], inner, *obj[k + 1 :]])
    key = rng.choice(list(obj))
    if rng.random() < 0.3:
        return {(k + "_renamed" if k == key else k): v for k, v in obj.items()}
    return {k: (mutated(rng, v, reorder) if k == key else v) for k, v in obj.items()}


def copied(obj):
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, (list, tuple)):
        return type(obj)(copied(v) for v in obj)
    if isinstance(obj, dict):
        return {k: copied(v) for k, v in obj.items()}
    return obj  # a Python value


def wrapped(t, path):
    """t placed at the end of ``path``: each step a container ("dict", "list" or "tuple")
    that also holds a tensor beside it, outermost first."""
    for kind in reversed(path):
        if kind == "dict":
            t = {"beside": torch.ones(2), "inner": t}
        else:
            t = [torch.ones(2), t] if kind == "list" else (torch.ones(2), t)
    return t


def unseen_by_print():
    """Pairs of tensors that differ although their printed forms are equal."""
    long = torch.arange(1201, dtype=torch.float32)
    return {
        "tensor([1.00001]) and tensor([1.00002]) in float32": (
            torch.tensor([1.00001]),
            torch.tensor([1.00002]),
        ),
        "float64 2**53 + 2 and its neighbour 2**53 + 4": (
            torch.tensor([2.0**53 + 2], dtype=torch.float64),
            torch.tensor([2.0**53 + 4], dtype=torch.float64),
        ),
        "arange(1201.) with its middle value (printed as '...') one float step up": (
            long,
            next_value(long, 600),
        ),
        "float32 zeros and int32 zeros (the same bytes)": (
            torch.zeros(2),
            torch.zeros(2, dtype=torch.int32),
        ),
    }


NESTINGS = [  # each container kind alone, then mixed to depths 3 and 4
    [],
    ["dict"],
    ["list"],
    ["tuple"],
    ["dict", "list", "tuple"],
    ["tuple", "dict", "list", "dict"],
]


def training_state_dicts():
    """(name, state dict) of the optimizers and the scheduler a training run saves beside the
    model, as torch writes them (no optimizer is built: that would import torch._dynamo):
    param_groups hold Python floats, ints, bools, a tuple, None ('foreach', 'fused') and the
    params' int ids, the state int-keyed tensors, the scheduler strings and inf."""
    moments = torch.arange(6.0).reshape(2, 3) / 7
    flags = dict(maximize=False, foreach=None, differentiable=False, fused=None)
    sgd = dict(lr=0.1, momentum=0.9, dampening=0, weight_decay=0, nesterov=True, **flags)
    adam = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, **flags)
    return {
        "SGD(momentum=0.9, nesterov=True).state_dict()": {
            "state": {0: {"momentum_buffer": moments}, 1: {"momentum_buffer": moments[0]}},
            "param_groups": [{**sgd, "params": [0, 1]}],
        },
        "Adam(lr=1e-3).state_dict() after 3 steps": {
            "state": {0: {"step": torch.tensor(3.0), "exp_avg": moments, "exp_avg_sq": moments**2}},
            "param_groups": [{**adam, "capturable": False, "params": [0, 1]}],
        },
        "ReduceLROnPlateau(adam).state_dict()": {
            **dict(factor=0.1, min_lrs=[0], patience=10, cooldown=0, eps=1e-8, last_epoch=0),
            **dict(mode_worse=math.inf, mode="min", threshold=1e-4, threshold_mode="rel"),
            **dict(best=math.inf, cooldown_counter=0, num_bad_epochs=0, _last_lr=[0.001]),
        },
    }


def one_value_changed(name, sd):
    """(key, what, copy of ``sd`` with that one non-tensor value changed) triples."""
    group = sd.get("param_groups", [{}])[0]
    changes = {
        "lr": math.nextafter(group.get("lr", 1.0), 2.0),  # the nearest float above
        "foreach": False,  # None (decide per device) is not False
        "nesterov": False,
        "betas": (0.9, 0.998),
        "amsgrad": True,
        "params": [1, 0],
        "mode": "max",
        "best": -math.inf,
        "eps": math.nextafter(sd.get("eps", 1.0), 2.0),
        "num_bad_epochs": 1,
    }
    out = []
    for key, value in changes.items():
        if key in group:
            other = copy.deepcopy(sd)
            other["param_groups"][0][key] = value
            out.append(
                (key, f"{name} with param_groups[0][{key!r}] {group[key]!r} -> {value!r}", other)
            )
        elif key in sd:
            other = copy.deepcopy(sd)
            other[key] = value
            out.append((key, f"{name} with [{key!r}] {sd[key]!r} -> {value!r}", other))
    return out


def assert_training_state_dicts_hashed_whole():
    """An optimizer's and a scheduler's state dict are state dicts too: each is accepted, and
    a change of one Python value in it (lr to its nearest float, 'foreach' None to False, a
    flag, betas, the params' order, a mode string, inf) changes its digest."""
    cases, done = [], set()
    for name, sd in training_state_dicts().items():
        cases.append((name, name, sd))
        for key, what, other in one_value_changed(name, sd):
            if key not in done:  # each key changed in one state dict only (cost)
                done.add(key)
                cases.append((what, what, other))
    with because(
        "fingerprint raised on an optimizer's or a scheduler's state dict: besides tensors a "
        "state dict holds Python floats, ints, bools, strings, tuples and None (an optimizer's "
        "param_groups: 'lr', 'betas', 'foreach': None)"
    ):
        digests = fingerprints_of([obj for _, _, obj in cases])
    assert_digests_apart(
        [(kind, name) for kind, name, _ in cases],
        digests,
        lambda name, other, digest: (
            f"fingerprint gave {name} and {other} the same digest {brief(digest)}: one value "
            "inside changed, so the digest must too. Every leaf of a state dict counts, the "
            "Python numbers, bools, strings and None beside its tensors included, each written "
            "with its type and its exact value (a float to its last bit)"
        ),
    )


@pytest.mark.task("ch09b.1")
def test_fingerprint_of_nested_containers_at_any_depth():
    """Inside dicts, lists and tuples to depth 4, a tensor is seen by its exact bytes, dtype
    and shape: two tensors that print alike (values printing rounds or elides) differ at
    every depth; on generated nested containers an equal copy keeps the fingerprint and one
    change of a value (to its neighbour), dtype, shape or key anywhere inside changes it; so
    does one change of a Python value (lr, None, a flag, a string) in an optimizer's or a
    scheduler's state dict."""
    for path in NESTINGS:
        where = " in ".join(reversed(path)) or "at the top"
        for what, (a, b) in unseen_by_print().items():
            with because(f"fingerprint raised on a tensor nested {where}"):
                same = rg.fingerprint(wrapped(a, path)) == rg.fingerprint(wrapped(b, path))
            assert not same, (
                f"fingerprint of a tensor nested {where} (innermost first) did not tell apart "
                f"{what}: containers at every depth must hash their tensors' own bytes, dtype "
                "and shape, never their printed form (printing rounds to 4 decimals and elides "
                "long tensors) — walk each container recursively down to its tensors"
            )
    rng = random.Random(9)
    for _ in range(40):
        obj = tree(rng, 0)
        with because("fingerprint raised on a nested list/tuple/dict of tensors"):
            fp = rg.fingerprint(obj)
            same = rg.fingerprint(copied(obj))
            other = mutated(rng, obj)
            different = rg.fingerprint(other)
        assert same == fp, "an equal copy of a nested container of tensors got another fingerprint"
        assert different != fp, (
            "one change deep inside a nested container (a value moved to its neighbour, a "
            "dtype, shape or key) left the fingerprint unchanged: walk lists, tuples and dicts "
            "at any depth, hashing keys, dtypes, shapes and bytes (never a printed form)"
        )
    assert_python_values_and_order_counted(random.Random(10), 40)
    assert_training_state_dicts_hashed_whole()


def assert_python_values_and_order_counted(rng, count):
    """Generated containers holding Python values beside tensors: an equal copy keeps the
    digest; a changed value, two items swapped or one dropped changes it."""
    t = torch.arange(3.0)
    cases = [([v, t], [v, t.clone()], [t, v]) for v in PYTHON_LEAVES]  # each value swapped
    cases += [((v, 7), (v, 7), (7, v)) for v in PYTHON_LEAVES]
    for _ in range(count):
        obj = tree(rng, 0, values=True)
        cases.append((obj, copied(obj), mutated(rng, obj, reorder=True)))
    with because("fingerprint raised on a nested container holding None, numbers or strings"):
        digests = fingerprints_of([o for case in cases for o in case])
    for k, (obj, _, other) in enumerate(cases):
        fp, same, different = digests[3 * k : 3 * k + 3]
        assert same == fp, (
            f"an equal copy of {brief(obj)} got another fingerprint: equal values give equal "
            "digests"
        )
        assert different != fp, (
            f"fingerprint gave {brief(obj)} and {brief(other)} the same digest: one value inside changed "
            "(a Python value), two items swapped places, or one was dropped. Every item of a list, "
            "tuple or dict counts in its place, None and plain numbers and strings included "
            "(skip nothing: [None, t] and [t, None] are different lists), each written with "
            "its type, its exact value and where the container ends"
        )


@probe
def fingerprints_of(objects):
    """fingerprint of each object, in order."""
    return [rg.fingerprint(obj) for obj in objects]


def shapes_of_numel(numel, dims, most):
    """Every shape of up to ``most`` dimensions drawn from ``dims`` holding ``numel``
    elements."""
    shapes = []
    for k in range(1, most + 1):
        shapes += [s for s in itertools.product(dims, repeat=k) if math.prod(s) == numel]
    return shapes


# shapes of one element count whose sizes written one after another read alike ((1, 11) and
# (11, 1) both "111", (0, 10) and (0, 1, 0) both "010"), and the 0-d shape
FRAMED_SHAPES = (
    [()]
    + shapes_of_numel(1, (1,), 4)
    + shapes_of_numel(11, (1, 11), 4)
    + shapes_of_numel(12, (1, 2, 6, 12), 3)
    + shapes_of_numel(110, (1, 10, 11, 110), 3)
    + shapes_of_numel(0, (0, 1, 10, 11), 3)
)


def nestings(a, b, c):
    """The same three tensors, in order, grouped by lists in different ways."""
    return {
        "[a, b, c]": [a, b, c],
        "[[a, b], c]": [[a, b], c],
        "[a, [b, c]]": [a, [b, c]],
        "[[a], [b, c]]": [[a], [b, c]],
        "[[a, b, c]]": [[a, b, c]],
        "[[[a]], b, c]": [[[a]], b, c],
        "{'a': [a, b], 'b': [c]}": {"a": [a, b], "b": [c]},
        "{'a': [a], 'b': [b, c]}": {"a": [a], "b": [b, c]},
    }


def compositions(total):
    """Every way to write ``total`` as an ordered sum of positive sizes (none for 0)."""
    if total == 0:
        yield ()
    for first in range(1, total + 1):
        for rest in compositions(total - first):
            yield (first, *rest)


def shapes(size):
    """Every shape of exactly ``size`` nodes: "t" (the tensor), "empty" (a container with
    nothing in it), ("seq", items) for a non-empty list or tuple, ("dict", ((key, item), ...))
    for a dict keyed by one or both of 'a' and 'b'. A list and a tuple of the same items, or
    empty containers of different kinds, share a shape: no test requires them to differ."""
    if size == 1:
        yield from ("t", "empty")
        return
    for sizes in compositions(size - 1):
        for items in itertools.product(*(list(shapes(k)) for k in sizes)):
            yield ("seq", items)
            if len(items) == 1:
                yield from (("dict", ((key, items[0]),)) for key in "ab")
            elif len(items) == 2:
                yield ("dict", tuple(zip("ab", items)))


def built(shape, kind):
    """``shape`` as an object: zeros(1) for the tensor, each list/tuple and empty container of
    ``kind`` ("list", "tuple" or "dict"; a sequence a list when ``kind`` is "dict")."""
    if shape == "t":
        return torch.zeros(1)
    if shape == "empty":
        return {"list": [], "tuple": (), "dict": {}}[kind]
    tag, items = shape
    if tag == "dict":
        return {key: built(item, kind) for key, item in items}
    items = [built(item, kind) for item in items]
    return tuple(items) if kind == "tuple" else items


def shown(obj):
    """obj written out with t for the tensor."""
    if isinstance(obj, torch.Tensor):
        return "t"
    if isinstance(obj, Mapping):
        return "{" + ", ".join(f"{k!r}: {shown(v)}" for k, v in obj.items()) + "}"
    inner = ", ".join(shown(v) for v in obj)
    return f"[{inner}]" if isinstance(obj, list) else f"({inner}{',' if len(obj) == 1 else ''})"


def assert_digests_apart(items, digests, collision):
    """``items`` are (kind, name) pairs fingerprinted as ``digests``: each digest is a SHA-256
    hex digest (64 lowercase hex characters), and two items share one only if they are of one
    kind; ``collision(name, other, digest)`` says what went wrong when they do not."""
    for (_, name), digest in zip(items, digests):
        assert isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest), (
            f"fingerprint of {name} returned {brief(digest)}"
            + (f" ({len(digest)} characters)" if isinstance(digest, str) else "")
            + ": the contract's digest is a SHA-256 hex digest, what hashlib.sha256's "
            "hexdigest() returns: 64 lowercase hexadecimal characters. Another hash function "
            "(md5, sha1), a shortened digest or other letters is another fingerprint"
        )
    first = {}
    for (kind, name), digest in zip(items, digests):
        seen = first.setdefault(digest, (kind, name)) if isinstance(digest, str) else (None, None)
        assert seen[0] == kind, collision(name, seen[1], digest)


def assert_containers_framed():
    """Every shape of up to 3 nodes built from one tensor, lists, tuples, dicts and empty
    containers (each built with lists, with tuples and with dicts for its empty containers)
    gets its own digest: shapes differ in nesting, in a dict's keys or in where an empty
    container sits, and each container must be framed so that it reads back one way only."""
    cases = [
        (shape, built(shape, kind))
        for size in (1, 2, 3)
        for shape in shapes(size)
        for kind in ("list", "tuple", "dict")
    ]
    cases = list({shown(obj): (shape, obj) for shape, obj in cases}.values())
    with because("fingerprint raised on a list, tuple or dict of tensors, or an empty one"):
        digests = fingerprints_of([obj for _, obj in cases])
    assert_digests_apart(
        [(shape, shown(obj)) for shape, obj in cases],
        digests,
        lambda name, other, digest: (
            f"fingerprint gave {name} and {other} the same digest {brief(digest)} "
            "(t is one tensor, zeros(1)): they differ in nesting, keys or where an empty "
            "container sits. Write every dict, list and tuple so that it reads back one way "
            "only: with its kind and its number of items (empty ones included) before them"
        ),
    )


def assert_framed():
    """Tensors of one element count (zeros, equal bytes) in every shape whose sizes written
    without a separator read alike, in two dtypes, and the same tensors grouped by nested lists
    in other ways, all get different fingerprints: the encoding is unambiguous."""
    tensors = [
        torch.zeros(s, dtype=dt) for dt in (torch.float32, torch.uint8) for s in FRAMED_SHAPES
    ]
    groups = nestings(torch.zeros(2), torch.ones(2), torch.zeros(2))
    with because("fingerprint raised on a zeros tensor of a shape with 0 or 1 sizes, or on lists"):
        digests = fingerprints_of([*tensors, *groups.values()])
    names = [f"zeros{tuple(t.shape)} {t.dtype}" for t in tensors] + list(groups)
    assert_digests_apart(
        [(name, name) for name in names],
        digests,
        lambda name, other, digest: (
            f"fingerprint gave {name} and {other} the same digest {digest!r}: "
            "they differ in shape, dtype or grouping. Write every part so it can be read back "
            "one way only: the shape as a delimited tuple (not its sizes run together, "
            "'111' is (1, 11) and (11, 1)), each container with its kind and length"
        ),
    )


def assert_equal_values_in_every_dtype_apart():
    """The same values held in each of ten dtypes get ten different digests: seeded draws of
    0s and 1s (which every dtype holds, bool included) and of small integers (which all the
    others hold exactly), in several shapes, empty and 0-d included. A dtype change that
    keeps every value (bfloat16 or float16 against float32, int8 against int64) is still a
    change of dtype."""
    gen = torch.Generator().manual_seed(23)
    tensors, kinds = [], []
    for shape, high in (((), 2), ((0,), 2), ((2, 3), 2), ((5,), 100), ((3, 1, 2), 100)):
        values = torch.randint(0, high, shape, generator=gen)
        for dtype in EVERY_DTYPE if high == 2 else EVERY_DTYPE[:-1]:  # bool holds 0 and 1 only
            tensors.append(values.to(dtype))
            kinds.append((shape, repr(values.tolist()), dtype))
    with because("fingerprint raised on a small tensor of one of the ten common dtypes"):
        digests = fingerprints_of(tensors)
    assert_digests_apart(
        [(kind, f"{kind[1]} as {kind[2]} (shape {kind[0]})") for kind in kinds],
        digests,
        lambda name, other, digest: (
            f"fingerprint gave {name} and {other} the same digest {brief(digest)}: the values "
            "are equal, but a dtype change that keeps every value is still a change of dtype. "
            "Hash the dtype of the tensor you were given with its own bytes; a tensor converted "
            "to a wider dtype on the way (for numpy, or for one common type) reports the wider "
            "one"
        ),
    )


# int keys on both sides of every width an encoding may cut them at (32, 53 and 64 bits):
# 0 and 2**64 share their low 64 bits, 2**53 + 1 and 2**70 + 1 round to their neighbours as
# floats; Python ints have no fixed width
BOUNDARY_INTS = [
    *(0, 1, -1, 2**31, 2**53, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1),
    *(2**64 - 1, 2**64, 2**64 + 1, 2**70, 2**70 + 1, -(2**70)),
]
# the text an encoding may write between a key and the key of a dict nested under it: the end
# of a string, a one-item container header, the start of a string; a flat key spelling it
# out must not read as the nesting
STRING_FRAMES = [("", ""), ("", "S:"), ("", "S"), ('"', '"'), ("'", "'")]
HEADERS = ["M1:", "L1:", "{", ": {"]
SEPARATORS = [".", "/", ":", "|", "\x00"]  # and flattened paths ("a.b") must not either


def int_text(k):
    """k in a readable length: its digits, or its first ones and its size past 20 digits."""
    text = str(k)
    return text if len(text) <= 20 else f"{text[:12]}... ({k.bit_length()}-bit int)"


def assert_keys_read_back_one_way():
    """Dicts that differ only in a key get different fingerprints, and so do a dict nested
    under a key and one flat key whose text spells the nesting out: int keys of any size, and
    string keys holding type tags, container headers, quotes or separators."""
    t = torch.zeros(1)
    rng = random.Random(11)
    huge = {rng.getrandbits(rng.randint(65, 400)) * rng.choice((1, -1)): t for _ in range(12)}
    objects = {"a dict keyed by 12 ints of 65 to 400 bits": huge}
    objects |= {f"{{{int_text(k)}: zeros(1)}}": {k: t} for k in BOUNDARY_INTS}
    objects |= {"{'a': {'b': zeros(1)}}": {"a": {"b": t}}, "{'a': [zeros(1)]}": {"a": [t]}}
    keys = ["a" + q + h + p + "b" for q, p in STRING_FRAMES for h in HEADERS]
    keys += ["a" + h for h in HEADERS] + ["a" + sep + "b" for sep in SEPARATORS]
    objects |= {f"{{{key!r}: zeros(1)}}": {key: t} for key in keys}
    names = list(objects)
    with because(
        "fingerprint raised on a dict keyed by a large int or an unusual string: a key may be "
        "an int of any size (Python ints have no fixed width) or any text"
    ):
        digests = fingerprints_of(list(objects.values()))
    assert_digests_apart(
        [(name, name) for name in names],
        digests,
        lambda name, other, digest: (
            f"fingerprint gave {name} and {other} the same digest {brief(digest)}: "
            "their keys (or their nesting) differ. Python ints have no fixed width and strings "
            "may hold any text, tags and separators included: write each int and string key "
            "so that it reads back one way only, whatever its size or content (its length "
            "before its text, or a quoted, escaped form)"
        ),
    )


# ---------------------------------------------------------------- ch09b.2


@pytest.mark.task("ch09b.2")
@pytest.mark.points(2)
def test_runs_repeat_whatever_the_global_state():
    """make_run(config, seed) is bitwise identical whatever was drawn from the global random
    state before the call."""
    fields = hidden_config()
    seen = [run_of(fields, 11, noise) for noise in (0, 1, 25)]
    assert all(same_state(init, seen[0][1]) for _, init, _ in seen), (
        "the initial weights of make_run(config, seed) depend on the global random state before the call"
    )
    assert all(v == seen[0][2] for _, _, v in seen), (
        "the data order of make_run(config, seed) depends on the global random state before the call"
    )
    assert all(bits(r.losses) == bits(seen[0][0].losses) for r, _, _ in seen), (
        "the losses of make_run(config, seed) are not bitwise reproducible across calls"
    )
    assert len({(r.init_fingerprint, r.order_fingerprint) for r, _, _ in seen}) == 1, (
        "equal runs must report equal init and order fingerprints"
    )


@pytest.mark.task("ch09b.2")
@pytest.mark.points(2)
def test_data_order_depends_on_the_seed_not_on_the_model():
    """The data order comes from the seed alone: a wider model keeps it, another seed changes it."""
    narrow, _, order_narrow = run_of(hidden_config(hidden=4), 7)
    wide, _, order_wide = run_of(hidden_config(hidden=40), 7)
    assert order_narrow == order_wide and narrow.order_fingerprint == wide.order_fingerprint, (
        "with the same seed, changing only the model width changed the data order: the shuffle must "
        "come from its own generator seeded from the seed, not from the global state the model consumed"
    )
    assert narrow.init_fingerprint != wide.init_fingerprint, (
        "models of different widths cannot share initial weights"
    )
    orders = [run_of(hidden_config(), s)[2] for s in (21, 22, 23, 24)]
    assert len({str(o) for o in orders}) == 4, "different seeds must shuffle the data differently"


def book_visits(fields, seed):
    """The examples each step feeds as the reading fixes them (a trusted replica): one
    torch.Generator().manual_seed(seed) made once per run, one torch.randperm(n) drawn from
    it per epoch, walked in slices of batch_size."""
    gen = torch.Generator().manual_seed(seed)
    n, bs, visits = fields["n"], fields["batch_size"], []
    for _ in range(fields["epochs"]):
        order = torch.randperm(n, generator=gen).tolist()
        visits += [order[start : start + bs] for start in range(0, n, bs)]
    return visits


def order_problem(fields, seed, visits):
    """What is wrong with the examples a run's steps fed (lists of indices), or None: they
    must be book_visits(fields, seed), step for step."""
    expected = book_visits(fields, seed)
    if visits == expected:
        return None
    steps = -(-fields["n"] // fields["batch_size"])
    k = next((i for i, (a, b) in enumerate(zip(visits, expected)) if a != b), None)
    if k is None:
        return f"its training steps fed {len(visits)} batches, expected {len(expected)}"
    return (
        f"step {k} (epoch {k // steps}) fed the examples {brief(visits[k])} where the shuffle "
        f"the reading fixes feeds {brief(expected[k])}: each epoch's order is the next "
        "torch.randperm(n) drawn from one generator seeded with the run's seed itself and made "
        "once per run (epoch e is its permutation number e). A generator made or seeded anew "
        "each epoch (even from seed + epoch), or seeded from anything but the seed, feeds other "
        "examples: runs of neighbouring seeds then share permutations"
    )


@pytest.mark.task("ch09b.2")
def test_every_epoch_visits_each_example_once_in_a_new_order():
    """Each epoch visits every example exactly once, in minibatches of batch_size (the last
    one smaller when n does not divide), each epoch shuffled anew, and another seed in
    other orders: epoch e's order is the e-th permutation of one generator seeded with the
    seed and made once per run."""
    fields = hidden_config(n=100, batch_size=32, epochs=3)
    result, _, visits = run_of(fields, 5)
    _, _, other_seed = run_of(fields, 6)
    sizes = [len(v) for v in visits]
    assert sizes == [32, 32, 32, 4] * 3, (
        f"with n=100, batch_size=32 and 3 epochs the training forwards saw batches of {sizes}; "
        "expected [32, 32, 32, 4] per epoch: every example once per epoch, the last batch smaller"
    )
    epochs = [sum(visits[4 * e : 4 * e + 4], []) for e in range(3)]
    assert all(sorted(e) == list(range(100)) for e in epochs), (
        "an epoch did not visit each of the 100 examples exactly once: shuffle a permutation "
        "(torch.randperm) and walk it in slices"
    )
    assert len({tuple(e) for e in epochs}) == 3, (
        "two epochs visited the data in the same order: make the shuffling generator once per run "
        "and draw a new permutation from it each epoch (re-seeding it every epoch repeats the order)"
    )
    assert len(result.losses) == 12, (
        f"make_run returned {len(result.losses)} losses for 12 steps: one loss per step"
    )
    assert other_seed != visits, (
        "seeds 5 and 6 visited the data in the same order: seed the shuffling generator from the seed"
    )
    for seed, seen in ((5, visits), (6, other_seed)):
        problem = order_problem(fields, seed, seen)
        assert problem is None, f"make_run(RunConfig(**{fields}), seed={seed}): {problem}"


def replay(fields, init, visits):
    """Minibatch SGD with MSE, written out: the losses of training from `init` on `visits`."""
    X, y = book_data(fields)
    model = nn.Sequential(
        nn.Linear(fields["d_in"], fields["hidden"]), nn.Tanh(), nn.Linear(fields["hidden"], 1)
    ).double()
    model.load_state_dict({k: v.double() for k, v in init.items()})
    losses = []
    for idx in visits:
        idx = torch.tensor(idx)
        loss = ((model(X[idx].double()) - y[idx].double()) ** 2).mean()
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= fields["lr"] * p.grad
        losses.append(loss.item())
    return losses


@pytest.mark.task("ch09b.2")
@pytest.mark.points(2)
def test_losses_are_the_steps_of_minibatch_sgd():
    """Each recorded loss is the mean squared error of that step's minibatch before its SGD
    update, starting from the weights build_model gives right after seeding."""
    fields = hidden_config(n=100, batch_size=32, epochs=2, lr=0.1)
    result, _, visits = run_of(fields, 9, noise=5)
    expected = replay(fields, book_init(fields, 9), visits)
    assert len(result.losses) == len(expected) and judge.is_close(
        torch.tensor(result.losses, dtype=torch.float64),
        torch.tensor(expected, dtype=torch.float64),
        atol=1e-6,
        rtol=1e-4,
    ), (
        "the losses are not those of minibatch SGD with mean squared error from the seeded initial "
        f"weights (one per step, recorded before the update, lr from the config): "
        f"{first_difference(result.losses, expected)}"
    )


BOOK = dict(n=256, d_in=8, hidden=16, lr=0.05, epochs=4, batch_size=32, data_seed=1234)


@pytest.mark.task("ch09b.2")
def test_the_books_experiment_runs_as_the_reading_describes():
    """RunConfig() is the reading's experiment: 256 examples of make_data's fixed problem, a
    8 -> 16 -> 1 MLP seeded from the seed, 4 epochs of 8 steps of SGD at lr 0.05, shuffled
    by one generator seeded with the seed."""
    with because("make_run(RunConfig(), seed=2) raised"):
        result, built, inputs = watched_run({}, 2, 4)
    assert built and same_state(built[0], book_init(BOOK, 2)), (
        "make_run(RunConfig(), 2) did not start from the 8 -> 16 -> 1 MLP build_model gives right "
        "after torch.manual_seed(2)"
    )
    visits = visits_of(BOOK, inputs)
    assert [len(v) for v in visits] == [32] * 32, (
        f"RunConfig() trains 4 epochs of 8 steps of 32 examples; the model saw batches of "
        f"{[len(v) for v in visits][:10]}..."
    )
    problem = order_problem(BOOK, 2, visits)
    assert problem is None, f"make_run(RunConfig(), seed=2): {problem}"
    expected = replay(BOOK, built[0], visits)
    assert len(result.losses) == 32 and judge.is_close(
        torch.tensor(result.losses, dtype=torch.float64),
        torch.tensor(expected, dtype=torch.float64),
        atol=1e-6,
        rtol=1e-4,
    ), (
        "the losses of make_run(RunConfig(), 2) are not those of SGD at lr 0.05 with mean "
        f"squared error on make_data's targets: {first_difference(result.losses, expected)}"
    )


@pytest.mark.task("ch09b.2")
def test_fingerprints_are_of_the_initial_weights_and_the_whole_order():
    """init_fingerprint describes the weights before training (a learning-rate change keeps
    it); order_fingerprint covers every epoch (one more epoch changes it)."""
    slow, init_slow, _ = run_of(hidden_config(lr=0.01), 13)
    fast, init_fast, _ = run_of(hidden_config(lr=0.3), 13)
    assert same_state(init_slow, init_fast) and slow.init_fingerprint == fast.init_fingerprint, (
        "the same seed under two learning rates gave different init fingerprints: fingerprint the "
        "weights before training (a state dict's tensors share storage with the parameters, so "
        "hash them before the first step)"
    )
    assert slow.order_fingerprint == fast.order_fingerprint, (
        "the learning rate changed the order fingerprint: the order comes from the seed alone"
    )
    longer, _, _ = run_of(hidden_config(lr=0.01, epochs=3), 13)
    assert longer.order_fingerprint != slow.order_fingerprint, (
        "a third epoch left the order fingerprint unchanged: fingerprint the order of every epoch"
    )
    assert longer.init_fingerprint == slow.init_fingerprint, (
        "the number of epochs changed the init fingerprint"
    )


@pytest.mark.task("ch09b.2")
def test_the_order_fingerprint_covers_every_epoch_not_only_the_last():
    """Runs whose data orders differ only in an earlier epoch get different order fingerprints; runs with the same orders get the same one."""
    fields = hidden_config(n=3, batch_size=3, epochs=2)  # one step per epoch: a visit is an order
    runs = {}
    for seed in range(24):
        result, _, visits = run_of(fields, seed)
        runs[seed] = (tuple(tuple(v) for v in visits), result.order_fingerprint)
    telling = [  # pairs that only an earlier epoch tells apart: what this test is about
        (a, b) for a in runs for b in runs
        if a < b and runs[a][0][-1] == runs[b][0][-1] and runs[a][0] != runs[b][0]
    ]  # fmt: skip
    assert telling, (
        f"make_run under 24 seeds visited the data in {len({o for o, _ in runs.values()})} "
        "different order(s), too few to test the order fingerprint: each epoch's order must be "
        "drawn from a generator seeded from the run's seed (ch09b.2's seeding tests say more)"
    )
    for a in runs:
        for b in runs:
            (orders_a, fp_a), (orders_b, fp_b) = runs[a], runs[b]
            if a >= b or orders_a[-1] != orders_b[-1]:
                continue
            assert (fp_a == fp_b) == (orders_a == orders_b), (
                f"seeds {a} and {b} visited the data in the orders {list(orders_a)} and "
                f"{list(orders_b)} (the same last epoch) and got "
                f"{'the same' if fp_a == fp_b else 'different'} order fingerprints: the order "
                "fingerprint covers every epoch's order, so it differs exactly when some epoch does"
            )


@probe
def watched_runs(cases):
    """watched_run(fields, seed, noise=3) of each case in turn, in one call: (result, initial
    weights of each model built, the input of each training forward) per case, or what it
    raised."""
    out = []
    for fields, seed in cases:
        try:
            out.append(watched_run.__wrapped__(fields, seed, 3))
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            out.append({"raised": f"{type(exc).__name__}: {str(exc)[:200]}"})
    return out


def run_config_case():
    """(fields, seed): a RunConfig from anywhere in its domain (one example, batches of one,
    a batch larger than the data, one epoch, no epoch, lr 0) and a seed up to 2**62."""
    return st.tuples(
        st.fixed_dictionaries(
            {
                "n": st.integers(1, 16),
                "d_in": st.integers(1, 5),
                "hidden": st.integers(1, 6),
                "lr": st.sampled_from([0.0, 0.01, 0.1]),
                "epochs": st.integers(1, 2),
                "batch_size": st.integers(1, 20),
                "data_seed": st.integers(0, 2**40),
            }
        ),
        st.one_of(st.integers(0, 3), st.integers(0, 2**62)),
    )


CONFIG_PARTS = [  # what case k of a draw is made to visit, so that every part is drawn
    lambda f, s: ({**f, "n": 1}, s),
    lambda f, s: ({**f, "batch_size": 1}, s),
    lambda f, s: ({**f, "batch_size": f["n"] + f["batch_size"]}, s),
    lambda f, s: (f, 2**32 + s % 1000),
    lambda f, s: ({**f, "lr": 0.0}, 2**62 + s % 1000),
    lambda f, s: ({**f, "epochs": 1}, 0),
    lambda f, s: ({**f, "epochs": 0}, s),  # no step: only the model is built
]


def run_problem(fields, seed, seen):
    """What is wrong with one watched make_run (None if nothing)."""
    if isinstance(seen, dict):
        if fields["epochs"] == 0:
            return (
                f"it raised {seen['raised']} on a run of 0 epochs. Such a run builds its model and "
                "takes no step: no losses, and an order made of no epoch's permutation; look at "
                "what gathers the steps' losses or the epochs' orders into one tensor, which "
                "has nothing to gather here"
            )
        return f"it raised {seen['raised']}"
    result, built, inputs = seen
    if not built:
        return "it never called build_model(config)"
    n, bs, epochs = fields["n"], fields["batch_size"], fields["epochs"]
    visits = visits_of(fields, inputs)
    per_epoch = [bs] * (n // bs) + ([n % bs] if n % bs else [])
    if [len(v) for v in visits] != per_epoch * epochs:
        return (
            f"its training forwards saw batches of {[len(v) for v in visits]}, expected "
            f"{per_epoch} in each of {epochs} epochs (every example once per epoch, the last "
            "batch smaller; a batch_size above n is one batch of all n)"
        )
    steps = len(per_epoch)
    for e in range(epochs):
        if sorted(sum(visits[e * steps : (e + 1) * steps], [])) != list(range(n)):
            return f"epoch {e} did not visit each of the {n} examples exactly once"
    if (problem := order_problem(fields, seed, visits)) is not None:
        return problem
    init = book_init(fields, seed)
    if not same_state(built[0], init):
        return (
            "the model's initial weights are not build_model's right after torch.manual_seed(seed)"
        )
    expected = replay(fields, init, visits)
    if len(result.losses) != len(expected) or not judge.is_close(
        torch.tensor(result.losses, dtype=torch.float64),
        torch.tensor(expected, dtype=torch.float64),
        atol=1e-6,
        rtol=1e-4,
    ):
        return (
            f"its {len(result.losses)} losses are not minibatch SGD's {len(expected)} "
            f"(one per step, before the update): {first_difference(result.losses, expected)}"
        )
    return None


@pytest.mark.task("ch09b.2")
@examples(2)
@given(cases=st.lists(run_config_case(), min_size=7, max_size=7))
def test_runs_over_the_whole_config_domain(cases):
    """On generated configs (1 to 16 examples, batches of one or larger than the data, 0 to 2
    epochs, lr 0) and seeds up to 2**62, make_run visits every example once per epoch in
    batch_size slices of the permutations one generator seeded with the seed draws, starts
    from the seeded weights and records each step's loss."""
    cases = [part(f, s) for part, (f, s) in zip(CONFIG_PARTS, cases)]
    seen = watched_runs(cases)
    bad = [
        (f["n"] * f["epochs"], f, s, problem)
        for (f, s), one in zip(cases, seen)
        if (problem := run_problem(f, s, one)) is not None
    ]
    if bad:
        _, fields, seed, problem = min(bad, key=lambda b: b[0])
        raise AssertionError(
            f"make_run(RunConfig(**{fields}), seed={seed}): {problem} ({len(bad)} of "
            f"{len(cases)} drawn configs wrong; the smallest shown). Seed torch with seed "
            "before build_model, shuffle each epoch with torch.randperm(n) from one generator "
            "seeded with seed and made once per run, and walk the permutation in slices of batch_size"
        )


# ---------------------------------------------------------------- ch09b.3


LOSS_VALUES = [0.5, 0.25, 0.5000000000000001, float("nan"), float("inf"), 1e-30, 0.0, -0.0]


@pytest.mark.task("ch09b.3")
def test_compare_runs_on_order_and_length():
    """Different orders make runs incomparable; losses of different lengths are a difference
    at the first step present in only one run, whatever value the longer run holds there."""
    base = Run([1.0] * 20, "i", "o")
    c = rg.compare_runs(base, Run([1.0] * 20, "i", "o2"))
    assert not c.comparable and entries(c, "order_fingerprint"), (
        "runs that visit the data in different orders are not comparable bit for bit, and the order must be named"
    )
    assert not entries(c, "losses"), "equal losses must not be reported as a difference"
    for field, one, other in (
        ("init_fingerprint", Run([1.0], "b", "o"), Run([1.0], "a", "o")),
        ("order_fingerprint", Run([1.0], "i", "b"), Run([1.0], "i", "a")),
    ):
        for x, y in ((one, other), (other, one)):
            c = rg.compare_runs(x, y)
            assert not c.comparable and entries(c, field), (
                f"compare_runs of runs whose {field}s are {getattr(x, field)!r} and "
                f"{getattr(y, field)!r} gave {c}: runs with "
                f"different {field}s are not comparable and get an entry naming {field}, "
                "whichever is passed first — compare "
                "fingerprints for equality, they have no order"
            )
    for a, b, step in (
        ([1.0] * 20, [1.0] * 12, 12),
        ([1.0, 2.0], [1.0, 2.0, 3.0], 2),
        ([1.0, 9.0, 3.0], [1.0, 2.0], 1),
        ([], [0.5], 0),
    ):
        c = rg.compare_runs(Run(a, "i", "o"), Run(b, "i", "o"))
        loss = entries(c, "losses")
        assert c.comparable and len(loss) == 1 and named_step(loss[0]) == step, (
            f"losses {a} and {b} first differ at step {step} (counted from 0; a step present in only "
            f"one run differs); compare_runs gave {c}"
        )
    # Every value an extra step can hold (nan, ±inf, ±0.0, tiny, a repeat of the other run's
    # last loss): one run is the other cut short, and the first step it lacks always differs.
    for v in LOSS_VALUES + [-float("inf")]:
        for common in ([], [v], [0.25, v]):
            for extra in ([v], [v, 0.5]):
                for a, b in ((common + extra, common), (common, common + extra)):
                    c = rg.compare_runs(Run(a, "i", "o"), Run(b, "i", "o"))
                    loss = entries(c, "losses")
                    assert c.comparable and len(loss) == 1 and named_step(loss[0]) == len(common), (
                        f"compare_runs of losses {a} and {b} gave {c}: step {len(common)} is present "
                        f"in only one run, so the losses first differ there whatever it holds (here "
                        f"{v!r}) — a missing step is not a loss: standing in a value for it (nan, "
                        "0.0, the last loss) makes a run that ends on that value look like one that "
                        "stopped a step earlier; look at the lengths"
                    )
    c = rg.compare_runs(Run([], "i", "o"), Run([], "i", "o"))
    assert c.comparable and list(c.differences) == [], (
        "two runs with no losses at all do not differ"
    )


@pytest.mark.task("ch09b.3")
def test_compare_runs_is_bitwise_with_nan():
    """Losses compare bit for bit: nan equals nan, but nan versus a number, inf versus -inf,
    0.0 versus -0.0 and a change in the last bits are differences at their step."""
    nan, inf = float("nan"), float("inf")
    a = Run([0.5, 0.4, nan, nan], "i", "o")
    c = rg.compare_runs(a, Run([0.5, 0.4, nan, nan], "i", "o"))
    assert c.comparable and list(c.differences) == [], (
        "two runs that diverged to nan at the same steps are bitwise identical: nan must compare equal to nan here"
    )
    c = rg.compare_runs(a, Run([0.5, 0.4 + 1e-12, nan, nan], "i", "o"))
    loss = entries(c, "losses")
    assert loss and named_step(loss[0]) == 1, (
        "a difference in the last bits of a loss must be reported with its step (counted from 0)"
    )
    for other, step in (([0.5, 0.4, 0.3, nan], 2), ([0.5, 0.4, nan, 0.2], 3)):
        c = rg.compare_runs(a, Run(other, "i", "o"))
        loss = entries(c, "losses")
        assert loss and named_step(loss[0]) == step, (
            f"a nan in one run where the other has a number is a difference (at step {step}); got {c}"
        )
    c = rg.compare_runs(Run([1.0, inf], "i", "o"), Run([1.0, inf], "i", "o"))
    assert list(c.differences) == [], "equal infinite losses are bitwise identical"
    c = rg.compare_runs(Run([1.0, inf], "i", "o"), Run([1.0, -inf], "i", "o"))
    assert entries(c, "losses") and named_step(entries(c, "losses")[0]) == 1, (
        "inf and -inf are different losses"
    )
    c = rg.compare_runs(Run([0.5, 0.0, nan], "i", "o"), Run([0.5, -0.0, nan], "i", "o"))
    loss = entries(c, "losses")
    assert loss and named_step(loss[0]) == 1, (
        f"compare_runs of losses [0.5, 0.0, nan] and [0.5, -0.0, nan] gave {c}: 0.0 == -0.0 "
        "in Python, but their bits differ (the sign), and losses are compared bitwise — compare "
        "each float's bytes (struct.pack('<d', x)) or float.hex(x), not == with a nan exception"
    )


FP_A, FP_B = "3f" * 31 + "a0", "3f" * 31 + "a1"  # 64 hex digits each, only the last differs


@pytest.mark.task("ch09b.3")
@pytest.mark.points(2)
@examples(60)
@given(
    shared=st.one_of(st.just([]), st.lists(st.sampled_from(LOSS_VALUES), max_size=40)),
    a=st.lists(st.sampled_from(LOSS_VALUES), max_size=5),
    b=st.lists(st.sampled_from(LOSS_VALUES), max_size=5),
    init=st.sampled_from([("i", "i"), ("i", "j"), ("j", "i"), (FP_A, FP_B), (FP_B, FP_B)]),
    order=st.sampled_from([("o", "o"), ("o", "p"), ("p", "o"), (FP_B, FP_A), (FP_A, FP_A)]),
)
def test_compare_runs_agrees_with_the_reference(shared, a, b, init, order):
    """On generated pairs of runs (up to 45 steps with a long common start, fingerprints
    differing only in their last character), comparable, the fields named and the first
    differing step agree with the reference."""
    a, b = shared + a, shared + b
    ra, rb = Run(a, init[0], order[0]), Run(b, init[1], order[1])
    got, want = rg.compare_runs(ra, rb), ref.compare_runs(ra, rb)
    fields = ("init_fingerprint", "order_fingerprint", "losses")
    got_fields = {f: len(entries(got, f)) for f in fields}
    want_fields = {f: len(entries(want, f)) for f in fields}
    assert bool(got.comparable) == want.comparable and got_fields == want_fields, (
        f"compare_runs({ra}, {rb}) gave {got}; expected comparable={want.comparable} and one entry "
        f"for each of {[f for f in fields if want_fields[f]]}"
    )
    if want_fields["losses"]:
        expected = named_step(entries(want, "losses")[0])
        assert named_step(entries(got, "losses")[0]) == expected, (
            f"compare_runs({ra}, {rb}) named {entries(got, 'losses')[0]!r}; the losses first differ "
            f"(bitwise, nan equal to nan; a step present in one run only differs) at step {expected}"
        )


# ---------------------------------------------------------------- ch09b.4


@pytest.mark.task("ch09b.4")
def test_the_threshold_scales_with_the_noise():
    """The decision scales with the seed-to-seed spread, and a better candidate is never a
    regression."""
    quiet = runs(sample(10, 1.0, 0.01, seed=4))
    noisy = runs(sample(10, 1.0, 1.0, seed=4))
    shift = lambda r, d: {s + 100: v + d for s, v in r.items()}  # noqa: E731
    assert verdict(quiet, shift(quiet, 0.3)), (
        "a shift of 0.3 is thirty seed-standard-deviations when runs vary by 0.01: that is a regression"
    )
    assert not verdict(noisy, shift(noisy, 0.3)), (
        "a shift of 0.3 is noise when runs vary by 1.0 from seed to seed: the decision must scale with the spread"
    )
    assert not verdict(quiet, shift(quiet, -0.3)), "a candidate that is better is not a regression"


@pytest.mark.task("ch09b.4")
@pytest.mark.points(2)
def test_few_seeds_cannot_resolve_a_shift_the_spread_explains():
    """With few seeds a shift of about one spread is within the noise of the means (few
    standard errors), though the same shift with many seeds is not."""
    for n, shift_sd in ((4, 0.9), (3, 1.2), (6, 1.0)):
        base = runs(sample(n, 0.5, 0.1, seed=20 + n))
        cand = runs(sample(n, 0.5 + 0.1 * shift_sd, 0.1, seed=40 + n), 50)
        t = shift_sd / math.sqrt(2 / n)
        assert not verdict(base, cand), (
            f"{n} seeds a side, candidate {shift_sd} seed-standard-deviations worse: that is only "
            f"{t:.1f} standard errors of the difference of the means — within seed noise; a rule "
            "that compares the shift with the spread of single runs ignores how many runs were averaged"
        )
    base = runs(sample(120, 0.5, 0.1, seed=61))
    cand = runs(sample(120, 0.58, 0.1, seed=62), 200)  # 0.8 sd with 120 seeds: 6.2 standard errors
    assert verdict(base, cand), (
        "120 seeds a side and a candidate 0.8 seed-standard-deviations worse (6.2 standard errors) "
        "is a regression: the noise of a mean shrinks with the number of runs"
    )


@pytest.mark.task("ch09b.4")
def test_both_sides_noise_counts():
    """The noise of the candidate's runs counts as much as the baseline's: a shift that a noisy
    side explains is not a regression, whichever side is noisy."""
    quiet = runs(sample(8, 0.20, 0.005, seed=30))
    noisy = runs(sample(8, 0.25, 0.2, seed=31), 8)  # mean 0.05 worse, runs vary by 0.2
    assert not verdict(quiet, noisy), (
        "a candidate whose runs vary by 0.2 from seed to seed is 0.05 worse on average than a "
        "quiet baseline (sd 0.005): well within the candidate's own noise (about 0.7 standard "
        "errors) — use both sides' variance, sqrt(var_b/n_b + var_c/n_c)"
    )
    noisy_base = runs(sample(8, 0.20, 0.2, seed=32))
    quiet_cand = runs(sample(8, 0.25, 0.005, seed=33), 8)
    assert not verdict(noisy_base, quiet_cand), (
        "a quiet candidate 0.05 worse than a baseline whose runs vary by 0.2 is within the "
        "baseline's noise — use both sides' variance"
    )


@pytest.mark.task("ch09b.4")
@examples(12)
@given(
    n_quiet=st.integers(12, 40),
    n_noisy=st.integers(2, 4),
    quiet_sd=st.sampled_from([0.0, 1e-3, 1e-2]),
    t=st.sampled_from([0.5, 1.0, 1.5]),
    noisy_side=st.sampled_from(["candidate", "baseline"]),
    scale=st.sampled_from([1e-3, 1.0, 60.0]),
    seed=st.integers(0, 10_000),
)
def test_many_quiet_runs_do_not_hide_few_noisy_ones(
    n_quiet, n_noisy, quiet_sd, t, noisy_side, scale, seed
):
    """Many quiet runs on one side and a few noisy ones on the other: a worsening of at most
    1.5 standard errors of the difference (each side's variance over its own count) is no
    regression, whichever side is the noisy one. One variance pooled over both sides, weighted
    by their run counts, lets the quiet side swamp the noisy side's noise."""
    se = scale * math.sqrt(quiet_sd**2 / n_quiet + 1 / n_noisy)
    noisy = sample(n_noisy, 0.0, scale, seed)
    quiet = sample(n_quiet, 0.0, scale * quiet_sd, seed + 1) if quiet_sd else [0.0] * n_quiet
    if noisy_side == "candidate":
        base, cand = quiet, [v + t * se for v in noisy]
    else:
        base, cand = noisy, [v + t * se for v in quiet]
    got = verdict(runs(base), runs(cand, 1000))
    assert not got, (
        f"is_regression(baseline of {len(base)} runs, candidate of {len(cand)} runs): the "
        f"{noisy_side}'s {n_noisy} runs vary with sd {scale}, the other side's {n_quiet} with sd "
        f"{scale * quiet_sd}, and the candidate is worse by {t} standard errors "
        f"(sqrt(var_b/n_b + var_c/n_c) = {se:.4g}); it said True. Count each side's noise over "
        "its own number of runs (Welch): a variance pooled over both sides and weighted by run "
        "counts is dominated by the many quiet runs and hides the few noisy ones"
    )
    noisy, n_noisy = sample(8, 0.0, scale, seed), 8  # the same sides, 8 noisy runs, 12 se worse
    se = scale * math.sqrt(quiet_sd**2 / n_quiet + 1 / n_noisy)
    if noisy_side == "candidate":
        base, cand = quiet, [v + 12 * se for v in noisy]
    else:
        base, cand = noisy, [v + 12 * se for v in quiet]
    assert verdict(runs(base), runs(cand, 1000)), (
        f"is_regression said False for a candidate 12 standard errors worse (the {noisy_side} "
        f"has 8 runs of sd {scale}, the other side {n_quiet} of sd {scale * quiet_sd}): far "
        "beyond what the noise of both sides explains"
    )


@pytest.mark.task("ch09b.4")
def test_deterministic_runs_with_no_noise():
    """When every run gives the same metric (no seed noise), equal metrics are not a regression
    and any worsening is; an improvement is not; nothing raises."""
    base = runs([0.5] * 8)
    assert not verdict(base, runs([0.5] * 8, 8)), (
        "baseline and candidate both 0.5 on every seed is no regression (and zero variance must not "
        "divide by zero)"
    )
    assert verdict(base, runs([0.5 + 1e-3] * 8, 8)), (
        "with no seed-to-seed noise at all, a candidate worse on every seed by 0.001 is worse by "
        "more than noise explains: a zero standard error makes any positive shift a regression"
    )
    assert not verdict(base, runs([0.5 - 1e-3] * 8, 8)), (
        "with no noise, a candidate better on every seed is not a regression"
    )
    # equal values whose means round differently with the number of runs (0.1 * 3 / 3 is
    # 0.10000000000000002): with no noise, a rounding error is not a shift
    for value in (0.1, 0.3, 0.7, 1 / 3, 2.2, 1e-5):
        for n_base, n_cand in ((2, 3), (3, 2), (5, 7), (9, 4)):
            got = verdict(runs([value] * n_base), runs([value] * n_cand, n_base))
            assert not got, (
                f"{n_base} baseline runs and {n_cand} candidate runs all gave {value!r}: "
                f"is_regression said {got}. No run differs from any other, so nothing is worse; "
                "with no noise, a difference of means that is only their rounding (a sum of "
                "equal floats divided by their count need not give the value back) is not a "
                "shift: compare the values themselves when a side never varies"
            )


@pytest.mark.task("ch09b.4")
def test_unequal_numbers_of_runs():
    """Each side's noise is divided by its own number of runs."""
    base = runs(sample(30, 1.0, 1.0, seed=50))
    few = runs(sample(3, 2.0, 1.0, seed=51), 100)  # 1 sd worse, 3 runs: 1.65 standard errors
    assert not verdict(base, few), (
        "3 candidate runs 1 sd worse than 30 baseline runs is about 1.6 standard errors: the "
        "candidate's mean of 3 runs is noisy — divide each side's variance by its own count"
    )
    base = runs(sample(40, 1.0, 1.0, seed=52))
    cand = runs(sample(12, 2.8, 1.0, seed=53), 100)  # 1.8 sd worse: about 5.3 standard errors
    assert verdict(base, cand), (
        "12 candidate runs 1.8 sd worse than 40 baseline runs (about 5 standard errors) is a regression"
    )


# every metric multiplied by one of these (positive: lower stays better), from tiny to huge
# units; squares stay far from float64's underflow (1e-308) and overflow
UNITS = (1e-30, 1e-20, 1e-13, 1e-9, 1e-5, 1e7, 1e12, 1e30)


@pytest.mark.task("ch09b.4")
@examples(40)
@given(
    n_b=st.integers(8, 30),
    n_c=st.integers(8, 30),
    scale=st.sampled_from([1e-3, 1.0, 250.0]),
    offset=st.sampled_from([0.0, 3.0, -40.0]),
    t=st.sampled_from([-12.0, -3.0, 0.0, 0.5, 1.0, 12.0, 20.0]),
    seed=st.integers(0, 10_000),
    unit=st.sampled_from(UNITS),
)
def test_clear_cases_of_many_shapes(n_b, n_c, scale, offset, t, seed, unit):
    """On generated run sets (sizes, scales, offsets), a shift of at most one standard error
    or any improvement is not a regression, and a shift of twelve or more is; in any units
    too: the same runs with every metric multiplied by 1e-30 up to 1e30 get the same verdict."""
    base = sample(n_b, offset, scale, seed)
    se = scale * math.sqrt(1 / n_b + 1 / n_c)
    cand = sample(n_c, offset + t * se, scale, seed + 1)
    expected = t >= 12
    got = verdict(runs(base), runs(cand, 1000))
    assert got == expected, (
        f"{n_b} baseline and {n_c} candidate runs (sd {scale}, mean {offset}) with the candidate "
        f"shifted by {t} standard errors: is_regression said {got}, expected {expected} "
        "(lower is better; judge the shift of the means against their noise)"
    )
    got = verdict(runs([v * unit for v in base]), runs([v * unit for v in cand], 1000))
    assert got == expected, (
        f"the same {n_b} baseline and {n_c} candidate runs (sd {scale}, mean {offset}, the "
        f"candidate {t} standard errors worse) with every metric multiplied by {unit:g}, as "
        f"if measured in other units: is_regression said {got}, expected {expected} as in the "
        "original units. A change of units scales the shift and the noise alike, so the "
        "verdict must not move: look for an absolute constant in the rule (a standard error "
        "or spread below some epsilon taken as no noise, an epsilon added to a divisor) or a "
        "quantity that does not scale like the shift (a standard deviation where a variance "
        "belongs)"
    )


@pytest.mark.task("ch09b.4")
def test_the_noise_estimate_survives_a_large_common_offset():
    """Metrics far from zero (a latency in ns, a count) get the same verdicts as near zero: a
    shift of at most one standard error is no regression, one of twelve or more is."""
    for offset, scale in ((1e6, 1e-6), (1e8, 1e-2), (-3e9, 0.5), (1e10, 0.1)):
        for t, n_b, n_c in ((0.5, 10, 10), (1.0, 6, 9), (0.0, 2, 2), (12.0, 10, 10), (20.0, 5, 7)):
            base = sample(n_b, offset, scale, seed=int(t * 10) + n_b)
            se = scale * math.sqrt(1 / n_b + 1 / n_c)
            cand = sample(n_c, offset + t * se, scale, seed=int(t * 10) + n_b + 1)
            got = verdict(runs(base), runs(cand, 100))
            assert got == (t >= 12), (
                f"{n_b} baseline and {n_c} candidate runs around {offset:g} that vary by {scale:g} "
                f"from seed to seed, the candidate {t} standard errors worse: is_regression said "
                f"{got}. The answer must not depend on how far from 0 the metric sits: "
                "sum(x**2)/n - mean**2 cancels catastrophically there (and float32 cannot even "
                "hold the differences); take the variance of the deviations from the mean "
                "(statistics.variance, numpy.var, a second pass)"
            )


@pytest.mark.task("ch09b.4")
def test_the_same_seeds_on_both_sides():
    """Baseline and candidate may be measured on the same seeds."""
    base = runs(sample(10, 0.3, 0.02, seed=70))
    worse = runs([v + 0.05 for v in sample(10, 0.3, 0.02, seed=71)])  # same seeds 0..9
    same = runs(sample(10, 0.3, 0.02, seed=71))
    assert verdict(base, worse) and not verdict(base, same), (
        "with both sides measured on seeds 0..9, a 2.5 sd shift must be a regression and an "
        "unshifted rerun must not"
    )


@pytest.mark.task("ch09b.4")
def test_two_runs_a_side_are_enough_to_answer():
    """Two runs a side measure the noise: is_regression answers (it refuses only below two)."""
    base, cand = {0: 0.20, 1: 0.22}, {2: 0.21, 3: 0.23}
    assert verdict(base, cand) is False, (
        "with exactly two runs a side is_regression must answer (not raise): a shift of 0.01 "
        "against runs that differ by 0.02 is not a regression"
    )
    assert verdict({0: 0.5, 1: 0.5}, {2: 0.5, 3: 0.5}) is False, (
        "two identical runs a side, all equal, are no regression"
    )


@pytest.mark.task("ch09b.4")
def test_a_lucky_baseline_run_does_not_count():
    """One exceptionally lucky baseline run does not make a matching candidate a regression;
    fewer than two runs on either side raise ValueError."""
    base = runs(sample(8, 0.5, 0.05, seed=6))
    base[7] = 0.2  # one baseline run six standard deviations better than the rest
    cand = runs(sample(8, 0.5, 0.05, seed=7), 10)
    assert not verdict(base, cand), (
        "the candidate matches the baseline's typical runs; only one exceptionally lucky baseline run is "
        "better — comparing against the best run, or one pair of runs, mistakes luck for a regression"
    )
    for one_side, other_side in (({0: 0.5}, cand), (base, {10: 0.9}), ({}, {})):
        try:
            rg.is_regression(one_side, other_side)
        except ValueError:
            continue
        raise AssertionError(
            f"with {len(one_side)} and {len(other_side)} runs is_regression must raise ValueError: "
            "one run cannot measure that side's seed-to-seed noise"
        )


@pytest.mark.task("ch09b.4")
def test_measured_runs_of_a_real_change():
    """Measured final losses: a rerun with other seeds is no regression, a lower learning rate is."""
    # final losses measured with the reference make_run (RunConfig(), last epoch mean) for lr 0.05
    # (seeds 0-7), a rerun with other seeds (8-15), and the changed lr 0.03 (seeds 8-15)
    base = {0: 0.1631, 1: 0.2354, 2: 0.1827, 3: 0.2007, 4: 0.1719, 5: 0.2154, 6: 0.1912, 7: 0.1742}
    rerun = {
        8: 0.2024,
        9: 0.1934,
        10: 0.1925,
        11: 0.2432,
        12: 0.2238,
        13: 0.2403,
        14: 0.1749,
        15: 0.1942,
    }
    slower = {
        8: 0.325,
        9: 0.2618,
        10: 0.2696,
        11: 0.3926,
        12: 0.3307,
        13: 0.362,
        14: 0.2021,
        15: 0.3006,
    }
    assert not verdict(base, rerun), (
        "rerunning the same configuration with other seeds is not a regression"
    )
    assert verdict(base, slower), (
        "a configuration whose mean metric is about five standard errors worse than the baseline's "
        "(8 seeds a side) is a regression"
    )


class SeedTable(Mapping):
    """A read-only seed -> metric Mapping that is not a dict (iterating it gives the seeds)."""

    def __init__(self, pairs):
        self._pairs = dict(pairs)

    def __getitem__(self, seed):
        return self._pairs[seed]

    def __iter__(self):
        return iter(self._pairs)

    def __len__(self):
        return len(self._pairs)


def as_mapping(form, pairs):
    """The seed -> metric pairs as a ``form``: dict, OrderedDict, MappingProxyType or SeedTable."""
    if form == "OrderedDict":
        return OrderedDict(pairs)
    if form == "MappingProxyType":
        return MappingProxyType(dict(pairs))
    return SeedTable(pairs) if form == "SeedTable" else dict(pairs)


@probe
def regression_verdicts(cases):
    """is_regression on each case (form, baseline pairs, candidate pairs), each side handed over
    as ``form``: {"kind": the answer's type name, "value": its truth} or what it raised."""
    out = []
    for form, base, cand in cases:
        try:
            answer = rg.is_regression(as_mapping(form, base), as_mapping(form, cand))
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            out.append({"raised": f"{type(exc).__name__}: {str(exc)[:200]}"})
            out[-1]["value_error"] = isinstance(exc, ValueError)
            continue
        truth = bool(answer) if isinstance(answer, bool | np.bool_) else None
        out.append({"kind": type(answer).__name__, "value": truth})
    return out


REGRESSION_KINDS = [  # (kind, shift in standard errors): every part of the domain, each drawn
    ("noisy", -3.0),
    ("noisy", 0.5),
    ("noisy", 12.0),
    ("noisy", 20.0),
    ("flat baseline", 0.5),
    ("flat baseline", 12.0),
    ("flat candidate", -12.0),
    ("flat candidate", 0.5),
    ("flat", 0.0),
    ("flat", 1.0),
    ("flat", -1.0),
    ("too few", 0.0),
    ("too few", 12.0),
]


def regression_case():
    """(n_b, n_c, ints, form, first seeds) for one run set."""
    return st.tuples(
        st.integers(2, 24),
        st.integers(2, 24),
        st.booleans(),
        st.sampled_from(["dict", "OrderedDict", "MappingProxyType", "SeedTable"]),
        st.tuples(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40)),
    )


def regression_run_sets(case, k):
    """The baseline and candidate pairs of ``case`` with the k-th kind of REGRESSION_KINDS, and
    the contract's answer ("raise" for fewer than two runs a side)."""
    n_b, n_c, ints, _, (seed_b, seed_c) = case
    kind, t = REGRESSION_KINDS[k]
    if kind == "too few":
        n_b, n_c = (n_b % 2, n_c) if k % 2 else (n_b, n_c % 2)
    elif t >= 12:
        # twelve standard errors is a regression for every rule the reading allows once each
        # side has 8 runs (a rank test with fewer cannot reach a strict level)
        n_b, n_c = max(n_b, 8), max(n_c, 8)
    offset, scale = (10**6, 60.0) if ints else (0.5, 0.25)
    if kind == "flat":
        # runs that never vary: any worsening is a regression, equality is not; a float
        # worsening is drawn as the smallest there is (one ulp), an int one as 1
        worse = math.nextafter(offset, math.inf) if t > 0 and not ints else offset + t
        base, cand = [offset] * n_b, [worse] * n_c
        want = t > 0
    else:
        noisy_b, noisy_c = kind != "flat baseline", kind != "flat candidate"
        se = scale * math.sqrt(noisy_b / max(n_b, 1) + noisy_c / max(n_c, 1))
        base = sample(n_b, offset, scale, 7 * k) if noisy_b and n_b > 1 else [offset] * n_b
        cand = sample(n_c, offset + t * se, scale, 7 * k + 1) if noisy_c and n_c > 1 else None
        cand = cand or [offset + t * se] * n_c
        want = t >= 12
    if ints:
        base, cand = [round(v) for v in base], [round(v) for v in cand]
    if min(n_b, n_c) < 2:
        want = "raise"
    pairs_b = [(seed_b + i, v) for i, v in enumerate(base)]
    pairs_c = [(seed_c + i, v) for i, v in enumerate(cand)]
    return pairs_b, pairs_c, want


@pytest.mark.task("ch09b.4")
@examples(3)
@given(cases=st.lists(regression_case(), min_size=13, max_size=13))
def test_verdicts_over_the_whole_domain(cases):
    """On generated run sets of 0 to 24 runs a side, float or integer metrics, any seeds, and
    the sides as a dict, OrderedDict, MappingProxyType or another Mapping, is_regression
    gives the answer the contract fixes (and raises ValueError below two runs a side)."""
    sets = [regression_run_sets(case, k) for k, case in enumerate(cases)]
    forms = [case[3] for case in cases]
    seen = regression_verdicts([(f, b, c) for f, (b, c, _) in zip(forms, sets)])
    bad = []
    for (base, cand, want), form, got in zip(sets, forms, seen):
        if want == "raise":
            ok = got.get("value_error", False)
        else:
            ok = "raised" not in got and got["kind"] in ("bool", "bool_") and got["value"] == want
        if not ok:
            bad.append((len(base) + len(cand), form, base, cand, want, got))
    if bad:
        _, form, base, cand, want, got = min(bad, key=lambda b: b[0])
        call = f"is_regression({form}({dict(base)}), {form}({dict(cand)}))"
        seen_text = (
            f"raised {got['raised']}"
            if "raised" in got
            else f"returned {got['value']} ({got['kind']})"
        )
        expected = "to raise ValueError" if want == "raise" else f"{want}"
        raise AssertionError(
            f"{call} {seen_text}, expected {expected} ({len(bad)} of {len(cases)} drawn cases "
            "wrong; the smallest shown). Each side is any Mapping seed -> metric (read its "
            "values(), never assume a dict or contiguous seeds), metrics may be ints, fewer than "
            "2 runs a side raise ValueError, a side that never varies has no noise (then any "
            "worsening is a regression, one ulp included, and equality is not: no isclose or "
            "epsilon there), a shift of at most half a standard "
            "error or any improvement is no regression and one of 12 with 8 or more runs a "
            "side is; the answer is a bool"
        )
