"""The invariants every call into the student's code keeps (``harness.invariants``): each one
fails on a function that breaks it, with a message naming the invariant, the object and
what changed; a function that keeps it passes; what a contract allows
(``harness.contracts``) is allowed and nothing more. (That every chapter's reference and
correct alternatives pass with the invariants on is ``tests/test_chapters.py``'s proof.)"""

from __future__ import annotations

import ast
import collections
import contextlib
import dataclasses
import inspect
import itertools
import os
import random
import re
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from harness import contracts, globalstate, index, invariants, ownership, probe
from harness.contracts import Allow
from harness.target import NAMED_TARGETS


def run(fn, *args, allow: Allow = contracts.NOTHING, **kwargs):
    """``fn(*args, **kwargs)`` as the tests call a student's function."""
    return invariants.call(fn, f"test.{fn.__name__}", fn.__name__, allow, args, kwargs)


def broken(fn, *args, allow: Allow = contracts.NOTHING, **kwargs) -> str:
    """The message of the invariant ``fn`` breaks (the test fails if it breaks none)."""
    invariants.HANDOUTS.clear()
    with pytest.raises(invariants.Broken) as caught:
        run(fn, *args, allow=allow, **kwargs)
    invariants.take_pending()
    return str(caught.value)


@pytest.fixture(autouse=True)
def _fresh():
    invariants.HANDOUTS.clear()
    invariants._LAYOUT_SIGNATURES.clear()
    invariants.take_pending()
    yield
    invariants.take_pending()


# ---- arguments unchanged ---------------------------------------------------------------


def test_a_list_rewritten_in_place_is_named_with_its_first_change():
    def classify_curve(losses):
        first = losses[0]
        for k, v in enumerate(losses):
            losses[k] = v / first
        return "slow"

    text = broken(classify_curve, [4.0, 2.0, 1.0])
    assert "classify_curve(losses) changed its argument `losses` (element 0: 4 -> 1)" in text
    assert "(invariant: arguments unchanged)" in text


def test_appending_to_a_list_or_a_dict_is_a_change():
    def pad(a):
        a.insert(0, 1)

    def note(d):
        d["seen"] = True

    assert "`a` (length 2 -> 3)" in broken(pad, [2, 3])
    assert "`d` (keys removed [], added ['seen'])" in broken(note, {"x": 1})


@pytest.mark.parametrize(
    "edit, seen",
    [
        (lambda x: x.mul_(2), "element [0, 0]: 1 -> 2"),
        (lambda x: x.unsqueeze_(0), "shape (2, 3)"),
        (lambda x: x.t_(), "shape (2, 3)"),
        (lambda x: x.requires_grad_(), "requires_grad False -> True"),
        (lambda x: x.set_(torch.ones(2, 3)), "other memory"),
    ],
    ids=["values", "unsqueeze_", "t_", "requires_grad_", "set_"],
)
def test_a_tensor_is_compared_by_value_and_metadata(edit, seen):
    def f(x):
        edit(x)

    assert seen in broken(f, torch.ones(2, 3))


def test_a_backward_pass_that_reaches_the_callers_tensor_is_a_change():
    def f(w):
        (w * 2).sum().backward()

    text = broken(f, torch.ones(3, requires_grad=True))
    assert "`w` (its .grad: None -> a tensor" in text


def test_nan_stays_nan_and_an_equal_new_float_is_no_change():
    def f(xs, t):
        xs[0] = float("nan")  # was NaN already
        xs[1] = float(xs[1])  # the same value, another object
        t[0] = float("nan")

    xs = [float("nan"), 2.5]
    t = torch.tensor([float("nan"), 1.0])
    run(f, xs, t)  # no change seen


def test_numpy_arrays_modules_optimizers_and_dataclasses_are_compared():
    @dataclasses.dataclass
    class Config:
        lr: float

    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1))
    opt = sgd(model, lr=0.1)

    def zero(a):
        a[1] = 0

    def nudge(m):
        with torch.no_grad():
            m[0].weight.add_(1)

    def evaluate(m):
        m.eval()

    def swap(m):
        m[1] = nn.Identity()

    def faster(o):
        o.param_groups[0]["lr"] = 1.0

    def tune(c):
        c.lr = 2.0

    assert "`a` (element [1]: 2 -> 0)" in broken(zero, np.array([1.0, 2.0]))
    assert "`m`'s 0.weight (element [0, 0]" in broken(nudge, model)
    assert "switched from training to evaluation mode" in broken(evaluate, model)
    model.train()
    assert "submodules were added, removed or replaced" in broken(swap, model)
    assert "param_groups[0]['lr']: 0.1 -> 1" in broken(faster, opt)
    assert "`c` (.lr: 0.1 -> 2)" in broken(tune, Config(0.1))


def test_a_module_left_compiled_hooked_or_patched_is_a_change():
    """What a module computes is the caller's too: compiled in place, a hook left behind
    (or one of the caller's taken away), a forward set on the instance, a setting of its
    constructor changed."""

    def compile_in_place(m):
        # what m.compile() does (its call imports torch._dynamo: seconds this file does not
        # need): set on the instance what nn.Module holds as None, checked below
        m._compiled_call_impl = torch.compile

    def peek(m):  # registers a hook to look at the output, and forgets to remove it
        m[0].register_forward_hook(lambda mod, args, out: None)

    def peek_and_clean(m):
        handle = m[0].register_forward_hook(lambda mod, args, out: None)
        handle.remove()

    def unhook(m):
        m._forward_pre_hooks.clear()

    def patch(m):
        m[1].forward = lambda x: x

    def cumulative(m):  # momentum None: BatchNorm's running statistics become plain means
        m[0].momentum = None

    assert nn.Module._compiled_call_impl is None, "this torch keeps compile() elsewhere"
    assert "compiled in place (nn.Module.compile)" in broken(compile_in_place, seq())
    text = broken(peek, seq())
    assert "`m` (0 was left holding 1 more forward hook(s)" in text, text
    run(peek_and_clean, seq())
    hooked = seq()
    hooked.register_forward_pre_hook(lambda mod, args: None)
    assert "lost 1 of the forward pre-hooks the caller had registered" in broken(unhook, hooked)
    assert "1 had forward set on the instance" in broken(patch, seq())
    norm = nn.Sequential(nn.BatchNorm1d(2))
    assert "0's setting 'momentum' changed: 0.1 -> None" in broken(cumulative, norm)
    values_only = Allow(changes=frozenset({"m.values"}))
    assert "compiled in place" in broken(compile_in_place, seq(), allow=values_only)


def seq() -> nn.Sequential:
    return nn.Sequential(nn.Linear(2, 2), nn.ReLU())


def sgd(model: nn.Module, lr: float) -> torch.optim.SGD:
    """An SGD optimizer as its constructor leaves it, without the constructor (whose first
    call imports torch._dynamo: seconds this file does not need)."""
    opt = torch.optim.SGD.__new__(torch.optim.SGD)
    opt.param_groups = [{"params": list(model.parameters()), "lr": lr, "momentum": 0.9}]
    opt.state = collections.defaultdict(dict)
    return opt


def test_optimizer_state_that_appears_is_a_change():
    model = nn.Linear(2, 1)
    opt = sgd(model, lr=0.1)

    def momentum(o):  # what a step leaves behind
        p = o.param_groups[0]["params"][0]
        o.state[p]["momentum_buffer"] = torch.zeros_like(p)

    assert "`o` (its state changed (a step was taken))" in broken(momentum, opt)


def test_what_a_function_only_reads_passes():
    def reads(losses, x, a, m, d):
        return sum(losses), x.sum().item(), a.sum(), m(x).sum().item(), len(d)

    model = nn.Linear(3, 1)
    run(reads, [1.0, 2.0], torch.ones(2, 3), np.ones(3), model, {"k": [1]})


def test_declared_in_place_changes_are_allowed_and_only_those():
    def sgd_step(params, lr):
        for p in params.values():
            p.sub_(lr)

    run(sgd_step, {"W": torch.ones(2)}, 0.1, allow=Allow(changes=frozenset({"params"})))

    def accumulate(model, x):
        model(x).sum().backward()

    only_grads = Allow(changes=frozenset({"model.grad"}))
    run(accumulate, nn.Linear(2, 1), torch.ones(1, 2), allow=only_grads)

    def steps(model, x):
        model(x).sum().backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= p.grad

    assert "changed its argument `model`'s weight" in broken(
        steps, nn.Linear(2, 1), torch.ones(1, 2), allow=only_grads
    )


def test_values_allowed_in_place_leave_the_modules_and_modes_the_callers():
    """``model.values``: a load may set every parameter and buffer, nothing else."""
    values_only = Allow(changes=frozenset({"model.values"}))
    state = nn.BatchNorm1d(2).state_dict()
    state["running_mean"] = torch.ones(2)

    def load(model):
        model.load_state_dict(state)

    def load_and_evaluate(model):
        model.load_state_dict(state)
        model.eval()

    def load_and_replace(model):
        model.weight = nn.Parameter(state["weight"].clone())

    run(load, nn.BatchNorm1d(2), allow=values_only)
    text = broken(load_and_evaluate, nn.BatchNorm1d(2), allow=values_only)
    assert "switched from training to evaluation mode" in text, text
    assert "it may set the values of model's parameters and buffers" in text
    assert "parameters were added, removed or replaced" in broken(
        load_and_replace, nn.BatchNorm1d(2), allow=values_only
    )


# ---- global state unchanged ------------------------------------------------------------


@pytest.mark.parametrize(
    "use, name",
    [
        (lambda: torch.rand(()), "torch's global random state"),
        (lambda: torch.manual_seed(3), "torch's global random state"),
        (lambda: np.random.random(), "numpy's global random state"),
        (lambda: random.random(), "Python's global random state"),
        (lambda: torch.set_grad_enabled(False), "grad mode"),
        (lambda: torch.set_default_dtype(torch.float64), "the default dtype"),
        (lambda: torch.set_num_threads(torch.get_num_threads() + 1), "torch's thread count"),
        (lambda: torch.set_anomaly_enabled(True), "anomaly detection"),
        (lambda: sys.setrecursionlimit(sys.getrecursionlimit() + 500), "Python's recursion limit"),
        (lambda: setattr(torch.backends.cudnn, "benchmark", True), "cuDNN's flags"),
        (lambda: torch.set_default_device("meta"), "torch function modes"),
        (
            lambda: nn.modules.module.register_module_forward_hook(lambda m, a, o: None),
            "global module hooks",
        ),
    ],
    ids=[
        *("torch-draw", "torch-seed", "numpy", "python", "grad", "dtype", "threads", "anomaly"),
        *("recursion", "cudnn", "device", "module-hooks"),
    ],
)
def test_global_state_is_checked_and_put_back(use, name):
    def f():
        use()

    before = globalstate.global_state()
    text = broken(f)
    assert f"f() changed {name}" in text and "(invariant: global state unchanged)" in text
    after = globalstate.global_state()
    assert globalstate._equal_state(before[name], after[name]), f"{name} was not put back"


def test_the_working_directory_and_the_environment(tmp_path):
    def wander():
        os.chdir(tmp_path)

    def export():
        os.environ["COURSE_TEST_LEAK"] = "1"

    here = os.getcwd()
    assert "changed the working directory" in broken(wander)
    assert os.getcwd() == here
    try:
        assert "COURSE_TEST_LEAK" in broken(export)
    finally:
        os.environ.pop("COURSE_TEST_LEAK", None)


def test_a_generator_given_is_the_only_one_drawn_from():
    allow = Allow(state=frozenset({"random"}), generator="generator")

    def draw(n, generator=None):
        return torch.rand(n)  # ignores the generator it was given

    run(draw, 3, allow=allow)  # none given: the global one is allowed
    assert "torch's global random state" in broken(
        draw, 3, generator=torch.Generator().manual_seed(0), allow=allow
    )


def test_pyplot_figures_and_the_current_figure_belong_to_the_caller():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def leaves_open():
        plt.figure()

    def draws_on_current():
        plt.plot([1, 2])

    def closes_current():
        plt.close()

    def own_figure():
        fig, ax = plt.subplots()
        ax.plot([1, 2])
        plt.close(fig)

    plt.close("all")
    assert "left figure(s) [1] open" in broken(leaves_open)
    assert not plt.get_fignums(), "the figure a call left open is closed again"
    caller = plt.figure()
    try:
        assert "drew into the caller's current figure" in broken(draws_on_current)
        assert "closed the caller's figure(s)" in broken(closes_current)
        run(own_figure)
    finally:
        plt.close(caller)


def test_a_file_left_open_is_named(tmp_path):
    kept = []

    def log(path):
        kept.append(open(path, "w"))  # noqa: SIM115 - the mistake under test

    try:
        assert "left " + str(tmp_path / "log.txt") + " open" in broken(log, tmp_path / "log.txt")
    finally:
        for f in kept:
            f.close()


# ---- writes only where told ------------------------------------------------------------


def test_only_the_given_path_is_written(tmp_path, monkeypatch):
    def exact(path):
        path.write_bytes(b"x")

    def with_suffix(path):
        path.with_suffix(".png").write_bytes(b"x")

    def by_name(path):
        open(path.name, "wb").close()  # relative: lands in the working directory

    run(exact, tmp_path / "a")
    text = broken(with_suffix, tmp_path / "curve")
    assert "wrote 'curve.png' in" in text and "(invariant: writes only where told)" in text
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    (tmp_path / "out").mkdir()
    assert "wrote 'ckpt.pt'" in broken(by_name, tmp_path / "out" / "ckpt.pt")


def test_a_path_given_as_text_counts_as_given(tmp_path):
    def save(path):
        Path(path).write_bytes(b"x")

    def save_beside(path):
        Path(path + ".pt").write_bytes(b"x")

    run(save, str(tmp_path / "ckpt"))
    assert "wrote 'ckpt.pt'" in broken(save_beside, str(tmp_path / "ckpt"))


def test_a_folder_given_is_the_calls_to_write_in(tmp_path):
    def fill(folder):
        (folder / "a.txt").write_text("a")
        (folder / "sub").mkdir()

    run(fill, tmp_path)


# ---- results are the call's own ---------------------------------------------------------


def test_returning_the_callers_list_or_a_view_of_its_tensor_is_aliasing():
    def same(xs):
        return xs

    def view(x):
        return x.view(-1)

    def copy(x):
        return x.reshape(-1).clone()

    text = broken(same, [1, 2])
    assert "returned the result, which is (or shares memory with) its argument `xs`" in text
    assert "(invariant: results are the call's own)" in text
    assert "its argument `x`" in broken(view, torch.ones(2, 2))
    run(copy, torch.ones(2, 2))
    run(view, torch.ones(2, 2), allow=Allow(aliases=frozenset({"x"})))


def test_returning_a_modules_live_gradient_is_aliasing():
    model = nn.Linear(2, 1)
    model(torch.ones(1, 2)).sum().backward()

    def grads(m):
        return {n: p.grad for n, p in m.named_parameters()}

    def copies(m):
        return {n: p.grad.clone() for n, p in m.named_parameters()}

    assert re.search(r"returned the result\['(weight|bias)'\]", broken(grads, model))
    run(copies, model)


def test_a_cached_result_handed_out_twice_is_caught():
    cache = {}

    def causal_mask(t):
        if t not in cache:
            cache[t] = torch.ones(t, t).tril().bool()
        return cache[t]

    def window(t):
        base = cache.setdefault("base", torch.ones(8, 8))
        return base[:t, :t]

    def listed(n):
        return cache.setdefault(("list", n), list(range(n)))

    for fn in (causal_mask, window, listed):
        invariants.HANDOUTS.clear()
        first = run(fn, 3)
        with pytest.raises(invariants.Broken, match="an earlier call also returned"):
            run(fn, 3)
        del first


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(
    ranges=st.lists(
        st.tuples(st.sampled_from(["cpu", "cuda"]), st.integers(0, 40), st.integers(0, 30)),
        max_size=10,
    )
)
def test_the_memory_index_answers_as_a_pairwise_scan_would(ranges):
    """Aliasing and hand-outs ask an index whether a result's memory overlaps any range
    (nested, repeated, touching, empty ones included): it must agree with one by one, for
    every range asked of it."""
    spans = [(device, lo, lo + n) for device, lo, n in ranges]
    index = ownership.Spans(spans)
    for asked in itertools.product(["cpu", "cuda"], range(0, 72, 3), range(1, 8, 3)):
        device, lo, n = asked
        one_by_one = any(ownership._overlap((device, lo, lo + n), s) for s in spans if s[1] < s[2])
        assert index.overlaps((device, lo, lo + n)) == one_by_one, (spans, asked)


def test_fresh_results_pass_even_where_memory_is_reused():
    def fresh(t):
        return torch.ones(t, t)

    for _ in range(5):
        run(fresh, 4)  # each result dropped: the allocator may hand its memory out again
    kept = [run(fresh, 4) for _ in range(3)]
    assert len({id(k) for k in kept}) == 3


# ---- results have the declared type ----------------------------------------------------


class Row(NamedTuple):
    name: str
    norm: float
    shape: tuple[int, ...]


@pytest.mark.parametrize(
    "value, annotation, wrong",
    [
        ([1, 1], "tuple[int, int]", "the result is a list, not a tuple[int, int]"),
        ((1, 2, 3), "tuple[int, int]", "has 3 items, not the 2"),
        ((1, 2.5), "tuple[int, ...]", "the result[1] is a float, not a int"),
        ([0.5, torch.tensor(0.4)], "list[float]", "the result[1] is a torch.Tensor"),
        (torch.tensor(1.0), "float", "is a torch.Tensor, not a float"),
        (True, "float", "is a bool, not a float"),
        ({"w": 1.0}, "dict[str, Tensor]", "the result['w'] is a float, not a Tensor"),
        ({1: True}, "dict[str, bool]", "a key of the result is a int"),
        (0, "int | None", None),
        (None, "int | None", None),
        ("0", "int | None", "is a str, not a int | None"),
        ([0.5, 3, np.float64(2.0), np.int64(1)], "list[float]", None),
        (np.float32(1.0), "float", "is a numpy.float32, not a float"),
        (np.bool_(True), "bool", "is a numpy.bool, not a bool"),
        (np.int64(2), "int", None),
        (Row("w", 1.0, (2, 3)), "Row", None),
        (Row("w", torch.tensor(1.0), (2, 3)), "Row", "the result.norm is a torch.Tensor"),
        (("w", 1.0, (2, 3)), "Row", "is a tuple, not a Row"),
        ({"w": torch.ones(1)}, "Params", None),
        ({"w": [1.0]}, "Params", "the result['w'] is a list"),
        (Path("x"), "Path", None),
        ("x", "Path", "is a str, not a Path"),
        (nn.Linear(1, 1), "nn.Module", None),
        (object(), "Unknown", None),  # a name that cannot be found is not checked
    ],
)
def test_a_result_is_checked_against_the_type_the_stub_declares(value, annotation, wrong):
    from harness import returns

    namespace = {"Row": Row, "Params": dict[str, torch.Tensor], "nn": nn, "Tensor": torch.Tensor}
    fields = {"Row": {"name": "str", "norm": "float", "shape": "tuple[int, ...]"}}
    found = returns.mismatch(value, annotation, namespace, fields)
    if wrong is None:
        assert found is None, found
    else:
        assert found is not None and wrong in found, found


def test_every_call_is_held_to_the_declared_result_type():
    """Through ``invariants.call``: the table's annotation for the call's key, the names
    looked up in the function's own module."""

    def conv2d_output_hw(h, w, kernel, stride=1, padding=0, dilation=1):
        return [h - kernel + 1, w - kernel + 1]

    text = broken_as(conv2d_output_hw, "ch06.conv2d_output_hw", 5, 5, 3)
    assert "the result is a list, not a tuple[int, int]" in text
    assert "(invariant: results have the declared type)" in text

    def right(h, w, kernel, stride=1, padding=0, dilation=1):
        return (h - kernel + 1, w - kernel + 1)

    assert invariants.call(right, "ch06.conv2d_output_hw", "f", contracts.NOTHING, (5, 5, 3), {})


def broken_as(fn, key: str, *args) -> str:
    invariants.HANDOUTS.clear()
    with pytest.raises(invariants.Broken) as caught:
        invariants.call(fn, key, fn.__name__, contracts.NOTHING, args, {})
    invariants.take_pending()
    return str(caught.value)


# ---- the signature is the contract's -----------------------------------------------------


@pytest.mark.parametrize(
    ("signature", "wrong"),
    [
        ("q, k, v, mask=None", None),
        ("q, k, v, mask=None, scale=1.0", None),  # an optional parameter of its own
        ("q, k, v, *, mask=None", "`mask` is keyword-only, not positional"),
        ("q, k, v, attn_mask=None", "it has no parameter `mask`"),
        ("q, v, k, mask=None", "`k` comes at place 3, not 2"),
        ("q, k, v, mask", "`mask` has no default (the exercise's is None)"),
        ("q, k, v, mask=True", "`mask` defaults to True, not None"),
        ("q, k, v, mask=None, *, dropout", "it requires a parameter `dropout`"),
        ("q, k, *, v, mask=None", "`v` is keyword-only, not positional"),
    ],
)
def test_a_function_takes_the_parameters_its_stub_declares(signature, wrong):
    from harness import signatures

    namespace: dict = {}
    exec(f"def attention({signature}):\n    return q", namespace)  # noqa: S102 - a test's own text
    found = signatures.mismatch("ch07.attention", namespace["attention"])
    assert found == wrong if wrong is None else wrong in (found or ""), found


def test_a_renamed_parameter_fails_the_call_naming_the_exercises_signature():
    def attention(q, k, v, attn_mask=None):
        return q.clone()

    text = broken_as(
        attention, "ch07.attention", torch.ones(1, 2), torch.ones(1, 2), torch.ones(1, 2)
    )
    assert "attention's parameters are not the exercise's attention(q, k, v, mask=None)" in text
    assert "(invariant: the signature is the contract's)" in text


# ---- the same values in any memory layout ------------------------------------------------


def test_a_view_that_needs_contiguous_memory_is_caught_on_a_transposed_copy():
    def per_channel_mean(x):
        return x.view(x.shape[0], x.shape[1], -1).mean(-1)

    text = broken(per_channel_mean, torch.arange(24.0).reshape(2, 3, 2, 2))
    assert "per_channel_mean(x) works on contiguous tensors, but when `x` held" in text
    assert "stored transposed" in text and "RuntimeError" in text and ".reshape" in text
    assert "(invariant: the same values in any memory layout give the same result)" in text


def test_a_batch_of_images_is_also_laid_out_channels_last():
    conv = nn.Conv2d(2, 3, 1)  # a channels-last batch gives channels-last features

    def head_input(images):
        with torch.no_grad():
            return conv(images).view(images.shape[0], -1)

    text = broken(head_input, torch.randn(2, 2, 3, 3, generator=torch.Generator().manual_seed(1)))
    assert "when `images` held the same values stored channels-last" in text


def test_of_several_tensors_the_one_whose_layout_matters_is_named():
    def loss(logits, targets):
        return logits.reshape(-1).sum() + targets.view(-1).float().sum()

    text = broken(loss, torch.ones(2, 3), torch.ones(2, 3, dtype=torch.long))
    assert "but when `targets` held the same values stored transposed" in text
    assert "`logits` held" not in text


def test_a_result_read_from_memory_instead_of_values_is_caught():
    def first_row(x):  # the first x.shape[1] numbers of memory, not row 0
        return torch.as_strided(x, (x.shape[1],), (1,)).clone()

    text = broken(first_row, torch.arange(6.0).reshape(2, 3))
    assert "first_row(x) works on contiguous tensors, but when `x` held the same values" in text
    assert "it gave another result (the result: the values differ)" in text


def test_a_one_dim_argument_is_laid_out_strided_and_inside_lists_too():
    def total(xs):
        return sum(float(x.numpy().view(np.uint8)[:8].astype(np.int64).sum()) for x in xs)

    text = broken(total, [torch.arange(4.0, dtype=torch.float64)])
    assert "`xs`[0] held the same values as every other element of a wider tensor" in text


def test_rounding_bounded_by_the_inputs_size_is_not_a_layout_difference():
    # F.batch_norm takes x * a + b on contiguous memory and (x - mean) * a on other layouts:
    # on data far from zero the two differ by ~1e-3 at results near 1, a few ulps of 1e4
    x = (torch.randn(8, 2, 4, generator=torch.Generator().manual_seed(0)) * 0.1 + 1e4).float()
    mean, var = x.double().mean((0, 2)).float(), x.double().var((0, 2)).float()

    def standardize(x):
        return torch.nn.functional.batch_norm(x, mean, var, training=False, eps=0.0)

    run(standardize, x)

    def from_memory(x):  # a real layout mistake on the same data is still caught
        raw = torch.as_strided(x, x.shape, x.contiguous().stride(), x.storage_offset())
        return standardize(raw)

    text = broken(from_memory, x)
    assert "works on contiguous tensors, but when `x` held" in text
    assert "the values differ" in text


def test_a_layout_free_function_passes_and_is_called_again_once_per_input_signature():
    calls = []

    def flat_mean(x, dim=1):
        calls.append(x.is_contiguous())
        return x.reshape(x.shape[0], -1).mean(dim) + x.sum() * 0

    x = torch.randn(4, 3, 5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(run(flat_mean, x), x.reshape(4, -1).mean(1))
    assert calls == [True, False, True]  # the call, then on a transposed copy, on a window
    run(flat_mean, x * 2)
    assert calls == [True, False, True, True]  # same shapes and dtype: not again
    run(flat_mean, x.double())
    assert calls[-3:] == [True, False, True]  # a new dtype is a new signature


def test_what_cannot_be_repeated_unseen_is_called_once():
    calls = []

    def note(x, *_):
        calls.append(1)
        return x.sum()

    x = torch.ones(3, 4)
    cases = [
        ((x, nn.Linear(1, 1)), contracts.NOTHING),  # a module: probes watch its hooks
        ((x, print), contracts.NOTHING),  # a function the call may run
        ((x.clone().requires_grad_(),), contracts.NOTHING),  # autograd sees both calls
        ((x, x[0]), contracts.NOTHING),  # views of each other
        ((x,), Allow(state=frozenset({"random"}))),  # may draw random numbers
        ((x,), Allow(changes=frozenset({"x"}))),  # changes its argument
        ((x,), Allow(layouts=False)),  # the contract asks about memory
        ((x, "t" * 201),),  # a text too long to be a name: a corpus
    ]
    for i, (args, *allow) in enumerate(cases):
        calls.clear()
        invariants._LAYOUT_SIGNATURES.clear()
        with torch.no_grad() if i != 2 else contextlib.nullcontext():
            run(note, *args, allow=allow[0] if allow else contracts.NOTHING)
        assert calls == [1], f"case {i} was called again"


def test_a_second_call_with_the_same_arguments_must_give_the_same_result():
    def conv_out(size, kernel, seen=[]):  # noqa: B006 - the mistake under test
        seen.append(size)
        return size - kernel + len(seen)

    text = broken(conv_out, 7, 3)
    assert "conv_out(size, kernel), called again with the same arguments: it gave another" in text
    assert "(the result: 5 vs 6)" in text
    assert "(invariant: the same call gives the same result)" in text


def test_state_kept_between_calls_is_not_blamed_on_the_layout():
    steps = [0]

    def train(x):  # a step counter kept at module level
        steps[0] += 1
        return x.reshape(-1).sum() * steps[0]

    text = broken(train, torch.ones(2, 3))
    assert "called again with the same arguments: it gave another result" in text
    assert "memory layout" not in text


def test_a_call_given_an_existing_file_is_not_repeated(tmp_path):
    calls = []

    def save(losses, path):
        calls.append(path)
        Path(path).write_text(str(len(calls)))
        return len(calls)

    run(save, [1.0], str(tmp_path / "curve.txt"))
    assert len(calls) == 1


def test_a_plain_objects_method_and_a_modules_forward_are_called_again():
    @dataclasses.dataclass(frozen=True)
    class Scale:
        s: float

        def apply(self, x):
            return x.view(-1) * self.s

    class Net(nn.Module):
        def forward(self, x):
            return x.view(x.shape[0], -1) * 2

    for cls in (Scale, Net):
        cls.__module__ = "chzz.layouts"
        invariants.checked(cls, "chzz", cls.__name__)
    with pytest.raises(invariants.Broken, match=r"Scale.apply\(x\) works on contiguous"):
        Scale(2.0).apply(torch.ones(2, 3))
    invariants.take_pending()
    with pytest.raises(invariants.Broken, match=r"Net.forward\(x\) works on contiguous"):
        Net()(torch.ones(2, 3, 4))
    invariants.take_pending()


def test_a_forward_that_is_watched_draws_or_changes_its_state_is_called_once():
    calls = []

    class Counted(nn.Module):  # a test's module inside the student's: it counts its calls
        def forward(self, x):
            calls.append("counted")
            return x

    class Net(nn.Module):
        def __init__(self, *inner):
            super().__init__()
            self.inner = nn.Sequential(*inner)

        def forward(self, x):
            calls.append("net")
            return self.inner(x).reshape(x.shape[0], -1) * 1.0

    Net.__module__ = "chzz.watched"
    invariants.checked(Net, "chzz", "Net")
    x = torch.ones(2, 3, 4)
    hooked = Net(nn.Identity())
    hooked.inner.register_forward_hook(lambda *_: None)
    cases = {
        "plain": (Net(nn.Identity()), ["net"] * 4),  # two other layouts, the other mode
        "a probe's hook": (hooked, ["net"]),
        "batch norm in training": (Net(nn.BatchNorm1d(3)), ["net"]),
        "a test's module inside": (Net(Counted()), ["net", "counted"]),
    }
    for i, (what, (model, expected)) in enumerate(cases.items()):
        calls.clear()
        invariants._LAYOUT_SIGNATURES.clear()
        with torch.no_grad():
            model(x + i)
        assert calls == expected, what


def test_a_method_that_changes_its_object_is_not_called_again():
    calls = []

    class Counter:
        def __init__(self):
            self.seen = []

        def add(self, x):
            calls.append(1)
            self.seen.append(x.shape)
            return x.view(-1).sum()

    Counter.__module__ = "chzz.counting"
    invariants.checked(Counter, "chzz", "Counter")
    Counter().add(torch.ones(2, 3))
    assert calls == [1]


def test_results_equal_up_to_a_reductions_rounding_are_the_same():
    from harness.layouts import difference

    a = torch.tensor([1.0, 2.0, float("nan")])
    assert difference(a, a + 1e-7) is None
    assert difference(a, a + 1e-2) == "the result: the values differ"
    assert difference((a, 2), (a, 3)) == "the result[1]: 2 vs 3"
    assert difference({"m": 1.0}, {"m": 1.0 + 1e-9}) is None
    assert "shape (3,)" in difference(a, a[:2].clone().repeat(2)[:3].reshape(3, 1))
    assert difference(torch.tensor([1, 2]), torch.tensor([1, 3])) is not None
    assert difference(object(), object()) is None


# ---- the examples of a batch are independent ---------------------------------------------

BATCHED = Allow(batch=("x",), batch_from=2)


@pytest.mark.parametrize(
    ("mistake", "seen"),
    [
        (lambda x: (x - x.mean(0)) / 2, "the values differ"),  # a statistic over the batch
        (lambda x: (x * 2).squeeze(), "shape (1, 3)"),  # drops a batch of one too
        (lambda x: (x[:1] * 2).expand_as(x).clone(), "the values differ"),  # first row only
        (lambda x: x.T.reshape(x.shape) * 1.0, "the values differ"),  # rows mixed by a reshape
        (lambda x: x.squeeze().mean(1, keepdim=True), "it raised IndexError"),
    ],
    ids=["batch statistic", "squeeze", "first example only", "rows mixed", "raises alone"],
)
def test_an_example_whose_answer_depends_on_its_batch_is_caught(mistake, seen):
    def rows(x):
        return mistake(x)

    text = broken(rows, torch.arange(12.0).reshape(4, 3), allow=BATCHED)
    assert "rows(x) on a batch of 4 and on its last example alone" in text
    assert "only the last row of `x`, a batch of one" in text and seen in text
    assert "(invariant: the examples of a batch are independent)" in text


def test_a_per_example_function_passes_and_meets_a_batch_of_one():
    sizes = []

    def scaled(x, w):
        sizes.append(x.shape[0])
        return x @ w

    x, w = torch.ones(3, 2), torch.ones(2, 2)
    assert torch.equal(run(scaled, x, w, allow=BATCHED), x @ w)
    assert sizes[0] == 3 and 1 in sizes  # the call, and once with the last row alone
    sizes.clear()
    run(scaled, torch.ones(1, 2), w, allow=BATCHED)
    assert 1 in sizes and 3 not in sizes  # a batch of one has nothing to cut


def test_a_broadcast_argument_is_not_cut_and_what_has_no_batch_is_not_compared():
    def scores(q, mask=None):  # mask [T, T], broadcast over the batch
        s = q @ q.mT
        s = s if mask is None else s.masked_fill(~mask, 0)
        return s, s.sum()  # a reduction: no batch dim to compare

    q = torch.randn(3, 3, 2, generator=torch.Generator().manual_seed(0))  # B == T: square
    allow = Allow(batch=("q", "mask?"), batch_from=3)
    mask = torch.ones(3, 3, dtype=torch.bool).tril()
    run(scores, q, mask, allow=allow)
    run(scores, q, mask.expand(3, 3, 3).clone(), allow=allow)  # per example: cut too
    run(scores, q[0], mask, allow=allow)  # no batch dim: not cut at all


def test_a_modules_forward_declared_batched_is_checked(monkeypatch):
    class Norm(nn.Module):
        def forward(self, x):
            return x / x.norm()  # the whole batch's norm

    Norm.__module__ = "chzz.batches"
    table = {**contracts.ALLOWED, "chzz.Norm.forward": BATCHED}
    monkeypatch.setattr(contracts, "ALLOWED", table)
    invariants.checked(Norm, "chzz", "Norm")
    with pytest.raises(invariants.Broken, match=r"Norm.forward\(x\) on a batch of 2"):
        Norm()(torch.arange(6.0).reshape(2, 3))
    invariants.take_pending()


def test_what_a_forward_keeps_on_its_module_is_the_first_calls(monkeypatch):
    class Keeper(nn.Module):  # keeps its last input for inspection, as attention keeps weights
        def forward(self, x):
            self.last = x.detach() * 1.0
            return x * 2

    Keeper.__module__ = "chzz.keeper"
    monkeypatch.setattr(contracts, "ALLOWED", {**contracts.ALLOWED, "chzz.Keeper.forward": BATCHED})
    invariants.checked(Keeper, "chzz", "Keeper")
    model = Keeper()
    model.last = torch.zeros(3, 2)
    x = torch.arange(6.0).reshape(3, 2)
    model(x)
    assert torch.equal(model.last, x) and model.last.is_contiguous()


# ---- methods of the student's classes ---------------------------------------------------


def test_a_modules_forward_that_writes_its_input_is_caught_and_its_own_state_is_free():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls += 1  # its own state: allowed
            return self.inner(x)

        def inner(self, x):  # reached from forward: not checked again
            x += self.lin(x)
            return x

    Block.__module__ = "chzz.blocks"
    assert invariants.checked(Block, "chzz", "Block") is Block
    block = Block()
    x = torch.ones(2, 3)
    with pytest.raises(invariants.Broken, match=r"Block.forward\(x\) changed its argument `x`"):
        with torch.no_grad():
            block(x)
    invariants.take_pending()


# ---- how a broken invariant is reported -------------------------------------------------


def test_a_probe_that_catches_the_failure_cannot_hide_it():
    def classify(losses):
        losses.clear()

    checked = invariants.checked(classify, "test", "classify")
    transport = probe.InProcess()
    with pytest.raises(invariants.Broken, match="changed its argument `losses`"):
        with transport.inside("a probe"):
            try:
                checked([1.0])
            except Exception:  # noqa: BLE001 - what a careless probe does
                pass


def test_split_runs_report_the_same_failure_as_an_assertion():
    def classify(losses):
        losses.clear()

    side = probe.StudentSide()
    checked = invariants.checked(classify, "test", "classify")
    with pytest.raises(invariants.Broken) as caught:
        side.answer("call classify", lambda: checked([1.0]))
    report = probe.error_report(caught.value)
    assert report["type"] == invariants.BROKEN_TYPE
    rebuilt = probe.rebuilt_error(report["type"], report["base"], report["message"])
    assert type(rebuilt) is invariants.Broken and not isinstance(rebuilt, probe.StudentError)
    assert str(rebuilt) == str(caught.value)


def test_stubs_keep_their_todo_and_errors_their_own_report():
    """A call that raises is reported by its own error (what it left behind is most often
    that error's consequence: a figure it did not get to close), and what it left is put
    back for the next call."""

    def stub(x):
        raise NotImplementedError("chzz.1 stub — see course/chzz.md#x")

    def fails(x):
        torch.set_grad_enabled(False)
        raise ValueError("bad input")

    with pytest.raises(NotImplementedError):
        run(stub, [1])
    with pytest.raises(ValueError, match="bad input"):
        run(fails, [1])
    assert torch.is_grad_enabled(), "the grad mode a failing call left behind is put back"


class _Watch(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_a_torch_function_mode_entered_and_not_left_is_named_and_left():
    def records(fn):
        _Watch().__enter__()  # no `with`: nothing leaves it if fn raises
        fn()
        torch._C._pop_torch_function_stack()

    def keeps(fn):
        _Watch().__enter__()  # and never leaves it
        fn()

    def boom():
        raise RuntimeError("the caller's fn failed")

    depth = torch._C._len_torch_function_stack()
    run(records, lambda: None)  # left on the way out: nothing to say
    text = broken(keeps, lambda: None)
    assert "changed torch function modes (1 entered and not left: _Watch)" in text, text
    assert torch._C._len_torch_function_stack() == depth, "the mode left entered is popped"
    with pytest.raises(RuntimeError, match="the caller's fn failed"):
        run(records, boom)  # its own error is the report; the mode is still left
    assert torch._C._len_torch_function_stack() == depth, "the mode left entered is popped"


def test_matplotlib_settings_are_the_callers_even_when_the_call_imports_matplotlib():
    import matplotlib

    def styles():
        matplotlib.rcParams["axes.grid"] = not matplotlib.rcParams["axes.grid"]

    grid = matplotlib.rcParams["axes.grid"]
    assert "rcParams (axes.grid changed)" in broken(styles)
    matplotlib.rcParams["axes.grid"] = grid
    # A call that imported matplotlib itself: nothing was there to read before it, so what
    # it leaves is compared with the settings as the import read them.
    before = globalstate.global_state()
    before["matplotlib's rcParams"] = None
    matplotlib.rcParams["axes.grid"] = not matplotlib.rcParamsOrig["axes.grid"]
    try:
        found = globalstate.state_changes(before, frozenset())
    finally:
        matplotlib.rcParams["axes.grid"] = grid
    assert [(n, d) for n, d, _ in found] == [("matplotlib's rcParams", "axes.grid changed")]


def test_the_checks_are_out_of_sight_of_a_probes_torch_function_mode():
    seen = []

    class Watch(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    def add(x):
        return x + 1

    x = torch.ones(2)
    with Watch():
        run(add, x)
    assert seen == ["add"], f"the torch calls seen were {seen}"


# ---- the table of what contracts allow --------------------------------------------------


def _definitions(chapter: str) -> dict[str, ast.AST]:
    module = index.chapter(chapter).module
    tree = ast.parse((NAMED_TARGETS["solutions"] / chapter / f"{module}.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = node
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, ast.FunctionDef):
                        found[f"{node.name}.{sub.name}"] = sub
    return found


@pytest.mark.parametrize("key", sorted(contracts.ALLOWED))
def test_every_allowance_names_a_definition_its_parameters_and_a_reason(key):
    chapter, _, name = key.partition(".")
    allow = contracts.ALLOWED[key]
    node = _definitions(chapter).get(name)
    assert node is not None, f"{key}: no such definition in solutions/{chapter}"
    assert allow.why.strip(), f"{key}: say why the contract allows it"
    if isinstance(node, ast.FunctionDef):
        params = {a.arg for a in node.args.args + node.args.kwonlyargs}
        params |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
        named = {n.split(".")[0] for n in allow.changes | allow.aliases}
        named |= {allow.generator} if allow.generator else set()
        named |= {n.rstrip("?") for n in allow.batch}
        assert named <= params, f"{key}: {sorted(named - params)} are not its parameters"
    groups = {group for _, _, group in globalstate.STATE.values()}
    assert allow.state <= groups, f"{key}: unknown state {sorted(allow.state - groups)}"


def test_the_table_cannot_be_loosened_from_the_students_process():
    with pytest.raises(TypeError):
        contracts.ALLOWED["ch00.classify_curve"] = Allow(changes=frozenset({"losses"}))  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        contracts.NOTHING.changes = frozenset({"x"})  # type: ignore[misc]
    assert re.fullmatch(r"[\w.]+", invariants.BROKEN_TYPE) and inspect.isclass(Allow)


# ---- every value of a declared type is accepted ------------------------------------------


@pytest.fixture
def declared_types(monkeypatch):
    """Declare parameter types for the ``test.*`` functions these tests call."""
    from harness import declared

    table = {"test": {}}
    monkeypatch.setattr(declared, "ANNOTATIONS", {**declared.ANNOTATIONS, **table})
    return table["test"]


def _pad_to_three(a):  # list arithmetic: a tuple cannot be added to a list
    return tuple([1] * (3 - len(a)) + a)


def _leaf(lr):  # only a float tensor can require a gradient
    return float(torch.tensor(lr, requires_grad=True) * 2)


def _mean(xs):  # an int64 tensor has no mean
    return torch.tensor(xs).mean().item()


def _total(m):  # other mappings are taken for empty
    return float(sum(m.values())) if isinstance(m, dict) else 0.0


def _walked_twice(xs):  # an iterator is empty the second time
    return len(list(xs)) + sum(xs)


def _doubled(k):  # a tuple doubles into four items
    return k * 2


def _is_image(path):  # a Path has no endswith
    return path.endswith(".png")


@pytest.mark.parametrize(
    ("fn", "annotation", "value", "seen"),
    [
        (_pad_to_three, "Sequence[int]", [4, 5], "`a` given as a tuple instead of a list"),
        (_leaf, "float", 1.0, "`lr` given as 1 instead of 1.0"),
        (_mean, "list[float]", [1.0, 2.0], "`xs` given with item 0 as 1 instead of 1.0"),
        (_total, "Mapping[int, float]", {0: 1.5}, "`m` given as a read-only mapping"),
        (_walked_twice, "Iterable[int]", [1, 2], "`xs` given as an iterator"),
        (_doubled, "int | tuple[int, int]", 3, "`k` given as (3, 3) instead of 3"),
        (_is_image, "str | Path", "a.png", "`path` given as a Path instead of a str"),
    ],
    ids=[
        "tuple for list",
        "int for float",
        "ints in a list",
        "mapping",
        "iterator",
        "pair",
        "path",
    ],
)
def test_a_function_that_takes_only_the_examples_kind_of_its_declared_type_is_caught(
    declared_types, fn, annotation, value, seen
):
    name = inspect.signature(fn).parameters.__iter__().__next__()
    declared_types[fn.__name__] = {name: annotation}
    text = broken(fn, value)
    assert seen in text and f"(its declared type is `{annotation}`)" in text, text
    assert "(invariant: every value of the declared type is accepted)" in text


def test_each_other_member_is_tried_once_per_signature_and_equal_numbers_are_the_same(
    declared_types,
):
    seen = []

    def scaled(xs, lr, shape):
        seen.append((type(xs[0]).__name__, type(lr).__name__, type(shape).__name__))
        return [x * lr for x in xs], tuple(shape)  # ints in, ints out: still the same values

    declared_types["scaled"] = {"xs": "list[float]", "lr": "float", "shape": "Sequence[int]"}
    assert run(scaled, [1.0, 2.0], 2.0, [3, 4]) == ([2.0, 4.0], (3, 4))
    assert seen == [
        ("float", "float", "list"),
        ("float", "float", "list"),  # the same call again (nothing to lay out otherwise)
        ("int", "float", "list"),  # the whole floats of xs as ints
        ("float", "int", "list"),  # lr as an int
        ("float", "float", "tuple"),  # shape as a tuple
    ]
    run(scaled, [5.0, 6.0], 3.0, [3, 4])  # the same kinds of input: not tried again
    assert len(seen) == 6
    run(scaled, [0.5], 0.25, [1])  # nothing whole to give as an int: shape alone
    assert seen[6:] == [("float", "float", "list")] * 2 + [("float", "float", "tuple")]


def test_a_call_that_is_not_plain_data_is_not_retyped(declared_types):
    calls = []

    def fit(model, lr):
        calls.append(lr)
        return lr

    declared_types["fit"] = {"model": "nn.Module", "lr": "float"}
    run(fit, nn.Linear(1, 1), 1.0)  # a module among the arguments: not called again unseen
    assert calls == [1.0]


# ---- the same result in train and eval mode ----------------------------------------------


def _module_class(forward, name: str):
    """A student module class ``name`` of chapter chzz whose forward is ``forward``."""

    class Student(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.drop = nn.Dropout(0.5)

    Student.forward = forward
    Student.__name__ = Student.__qualname__ = name
    Student.__module__ = "chzz.modes"
    invariants.checked(Student, "chzz", name)
    return Student


@pytest.mark.parametrize("train", [True, False], ids=["called in training", "called in eval"])
@pytest.mark.parametrize(
    ("forward", "seen"),
    [
        (lambda self, x: self.lin(x) * (2.0 if self.training else 1.0), "disagree"),
        (lambda self, x: self.drop(self.lin(x)), "dropout"),
    ],
    ids=["reads self.training", "dropout"],
)
def test_a_forward_that_depends_on_the_mode_is_caught(forward, seen, train):
    model = _module_class(forward, "Moody")().train(train)
    with pytest.raises(invariants.Broken) as caught:
        model(torch.ones(2, 3))
    invariants.take_pending()
    text = str(caught.value)
    assert "(invariant: the same result in train and eval mode)" in text, text
    assert seen in text or "disagree" in text, text
    assert model.training is train and model.lin.training is train  # the caller's modes


def test_a_forward_the_same_in_both_modes_passes_and_keeps_mixed_modes(monkeypatch):
    model = _module_class(lambda self, x: self.lin(x), "Steady")()
    model.drop.eval()  # mixed modes: the check puts back each submodule's own
    assert model(torch.ones(2, 3)).shape == (2, 3)
    assert model.training and model.lin.training and not model.drop.training

    table = {**contracts.ALLOWED, "chzz.Declared.forward": Allow(modes=True)}
    monkeypatch.setattr(contracts, "ALLOWED", table)
    moody = _module_class(lambda self, x: self.lin(x) * (2.0 if self.training else 1.0), "Declared")
    moody()(torch.ones(2, 3))  # declared: batch statistics, as RunningNorm's


def test_batch_statistics_in_training_are_not_judged_example_by_example(monkeypatch):
    def batch_norm(self, x):  # the batch's statistics, kept in no buffer
        return (x - x.mean(0)) / x.std(0)  # in eval too: the mistake the check is for

    declared = Allow(modes=True, batch=("x",), batch_from=2)
    table = {**contracts.ALLOWED, "chzz.Batchy.forward": declared}
    monkeypatch.setattr(contracts, "ALLOWED", table)
    model = _module_class(batch_norm, "Batchy")()
    model(torch.randn(4, 3, generator=torch.Generator().manual_seed(0)))  # training: fine
    with pytest.raises(invariants.Broken) as caught:  # eval: each example on its own
        model.eval()(torch.randn(5, 3, generator=torch.Generator().manual_seed(1)))
    invariants.take_pending()
    assert "(invariant: the examples of a batch are independent)" in str(caught.value)


# ---- the caller's functions run in the caller's grad mode --------------------------------


def _caller_fn(x):
    return (x * 2).sum()


def test_a_callers_function_run_only_under_no_grad_is_caught_even_when_that_makes_it_raise():
    def quiet(fn, x):  # "no graph needed to look at it"
        with torch.no_grad():
            return float(fn(x))

    def loud(fn, x):
        with torch.no_grad():
            fn(x).backward()  # raises: the graph it needs was not recorded
        return 0.0

    x = torch.ones(2, requires_grad=True)
    for wrong in (quiet, loud):
        text = broken(wrong, _caller_fn, x)
        assert "called `fn` only with gradients off" in text, text
        assert "(invariant: the caller's functions run in the caller's grad mode)" in text


def test_a_function_also_run_with_gradients_and_what_is_not_the_callers_pass():
    def train_then_evaluate(fn, x):  # a training loop that evaluates under no_grad
        w = x.detach().clone().requires_grad_()
        fn(w).backward()
        with torch.no_grad():
            return float(fn(w))

    x = torch.ones(2)
    assert run(train_then_evaluate, _caller_fn, x) == 4.0
    given = []

    def keeps(fn, model):
        given.append((fn, model))
        with torch.no_grad():
            return model(torch.ones(1, 1)).shape[0]

    model = nn.Linear(1, 1)
    with torch.no_grad():  # a caller without gradients has no mode to keep
        run(keeps, _caller_fn, model)
    run(keeps, nn.Identity(), model)  # a module is the caller's model, not a function
    run(keeps, _caller_fn, model, allow=Allow(callbacks=False))  # handed over as it is
    assert [fn for fn, _ in given] == [_caller_fn, given[1][0], _caller_fn]
    assert isinstance(given[1][0], nn.Identity)


def test_memory_read_from_the_storages_start_is_caught_on_a_window_inside_it():
    def from_the_start(x):  # as_strided's offset counts from the storage, not from x
        return x.as_strided(x.shape, x.stride(), 0) * 2

    text = broken(from_the_start, torch.arange(6.0).reshape(2, 3))
    assert "a window starting three elements into a bigger tensor" in text, text


def test_a_function_given_a_generator_is_called_again_with_one_in_the_same_state():
    drawn = []

    def windows(data, n, generator):
        starts = torch.randint(len(data) - 2, (n,), generator=generator)
        drawn.append(starts.tolist())
        return torch.stack([data[i : i + 2] for i in starts.tolist()])

    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    run(windows, torch.arange(10.0), 4, g)
    assert len(drawn) > 1 and all(d == drawn[0] for d in drawn)  # the same draws each time
    once = torch.Generator().set_state(state)
    torch.randint(8, (4,), generator=once)
    assert torch.equal(g.get_state(), once.get_state())  # the caller's generator moved, once

    def flat_windows(data, n, generator):  # reads the storage from its start
        starts = torch.randint(len(data) - 2, (n,), generator=generator)
        return torch.stack([data.as_strided((2,), (1,), int(i)) for i in starts])

    text = broken(flat_windows, torch.arange(10.0), 4, torch.Generator().manual_seed(3))
    assert "(invariant: the same values in any memory layout give the same result)" in text


def test_a_call_that_took_long_is_not_made_again(monkeypatch):
    """The re-calls count against the student's time limit: a call that spent more CPU
    than ``RECALL_CPU_LIMIT_S`` is checked once, however slow its honest work is."""
    calls = []

    def doubled(x):
        calls.append(1)
        return x * 2

    monkeypatch.setattr(invariants, "RECALL_CPU_LIMIT_S", -1.0)  # every call counts as long
    run(doubled, torch.ones(2, 3))
    assert len(calls) == 1
    monkeypatch.setattr(invariants, "RECALL_CPU_LIMIT_S", 60.0)
    run(doubled, torch.ones(3, 4))
    assert len(calls) > 2  # a quick call: made again in other layouts
