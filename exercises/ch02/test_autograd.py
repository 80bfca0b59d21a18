"""Public tests for ch02 — run with `pytest exercises/ch02` (add `--impl solutions` to
see the reference pass)."""

import copy
import inspect
import os
import re

import pytest
import torch
from torch import nn

from harness.target import chapter_module

ag = chapter_module("ch02", "autograd")

HERE = os.path.basename(__file__)
X = torch.tensor([1.0, 2.0, 3.0, 4.0])
Y = 3.0 * X


def marked_lines(fn) -> dict[str, int]:
    """Line numbers of the `# cut: NAME` markers inside one of this file's functions."""
    lines, start = inspect.getsourcelines(fn)
    found = {}
    for i, line in enumerate(lines):
        m = re.search(r"# cut: (\w+)", line)
        if m:
            found[m.group(1)] = start + i
    return found


def points_at(cut, line: int) -> bool:
    return HERE in cut.location and str(line) in re.findall(r"\d+", cut.location)


# ---------------------------------------------------------------- ch02.1 reachable_params


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_on_the_books_graph():
    w1 = torch.tensor(0.5, requires_grad=True)
    w2 = torch.tensor(1.0, requires_grad=True)
    features = (w1 * X).detach()
    loss = ((w2 * features - Y) ** 2).mean()
    got = ag.reachable_params(loss, [("w1", w1), ("w2", w2)])
    assert got == {"w1": False, "w2": True}, (
        f"reachable_params on the book's loss (first stage detached) returned {got}, expected "
        "{'w1': False, 'w2': True}: follow loss.grad_fn.next_functions down to the AccumulateGrad "
        "nodes; their .variable is the leaf a gradient would reach"
    )


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_leaves_the_graph_untouched():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3))
    x = torch.randn(5, 3)
    hidden = model[1](model[0](x)).detach()  # the first layer is cut off
    loss = model[2](hidden).pow(2).mean()
    got = ag.reachable_params(loss, model.named_parameters())
    expected = {"0.weight": False, "0.bias": False, "2.weight": True, "2.bias": True}
    assert got == expected, (
        f"reachable_params(loss, model.named_parameters()) returned {got}, expected {expected}: "
        "the first layer's output was detached, so only the last layer's parameters are reachable"
    )
    touched = [n for n, p in model.named_parameters() if p.grad is not None]
    assert not touched, (
        f"after reachable_params, .grad is set on {touched}: the walk must only read "
        "grad_fn.next_functions, never run backward"
    )
    try:
        loss.backward()
    except RuntimeError as exc:
        pytest.fail(
            f"loss.backward() after reachable_params raised {exc!s:.120}: the graph was consumed; "
            "reading the graph must not call backward"
        )
    filled = {n: p.grad is not None for n, p in model.named_parameters()}
    assert filled == expected, (
        f"after a real backward, gradients reached {filled}, reachable_params said {got}"
    )


# ---------------------------------------------------------------- ch02.2 find_graph_cuts


def book_forward(w1, w2):
    features = (w1 * X).detach()  # cut: detach
    return ((w2 * features - Y) ** 2).mean()


@pytest.mark.task("ch02.2")
@pytest.mark.points(2)
def test_find_graph_cuts_finds_the_books_detach():
    w1 = torch.tensor(0.5, requires_grad=True)
    w2 = torch.tensor(1.0, requires_grad=True)
    cuts = ag.find_graph_cuts(book_forward, w1, w2)
    line = marked_lines(book_forward)["detach"]
    assert len(cuts) == 1 and "detach" in cuts[0].op, (
        f"find_graph_cuts(book_forward, w1, w2) returned {cuts}; expected one Cut whose op names "
        "'detach': record every torch call (a TorchFunctionMode) and keep those whose input "
        "required grad while the output does not"
    )
    assert points_at(cuts[0], line), (
        f"the detach cut's location is {cuts[0].location!r}; it should point at the user's line "
        f"{HERE}:{line}, the first stack frame outside torch and outside your module"
    )


def four_cuts(w):
    a = w.detach() * 2  # cut: detach
    b = w.data + 1  # cut: data
    with torch.no_grad():
        c = w * 3  # cut: mul
    d = torch.tensor(w.sum().item())  # cut: item
    return a + b + c + d


@pytest.mark.task("ch02.2")
@pytest.mark.points(3)
def test_find_graph_cuts_reports_each_kind_in_order():
    w = torch.ones(3, requires_grad=True)
    cuts = ag.find_graph_cuts(four_cuts, w)
    lines = marked_lines(four_cuts)
    ops = [c.op for c in cuts]
    assert len(cuts) == 4, (
        f"find_graph_cuts(four_cuts, w) found {len(cuts)} cuts {ops}; expected 4 — detach, .data, "
        "a multiplication under no_grad, and .item() re-wrapped: an op under no_grad and an .item() "
        "are cuts too, because their input required grad and their result does not"
    )
    for cut, kind in zip(cuts, ["detach", "data", "mul", "item"]):
        assert kind in cut.op, (
            f"cuts in order are {ops}; expected ops naming detach, data, mul, item: report them "
            "in the order they ran"
        )
        assert points_at(cut, lines[kind]), (
            f"the {kind} cut's location is {cut.location!r}, expected the line {HERE}:{lines[kind]} "
            "of the user code that performed it"
        )


def clean_forward(w, x):
    h = torch.relu(x @ w)
    scale = torch.zeros_like(h) + 2.0
    mask = h > 0.1
    noise = x * 0.5  # plain data: nothing here ever required grad
    return (h * scale * mask).sum() + noise.sum()


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_is_silent_on_a_clean_function():
    w = torch.randn(4, 4, requires_grad=True)
    x = torch.randn(3, 4)
    cuts = ag.find_graph_cuts(clean_forward, w, x)
    assert cuts == [], (
        f"find_graph_cuts on a function whose gradient path is intact reported {cuts}: a cut needs "
        "an input that required grad; bool results and zeros_like only read shapes"
    )


# ---------------------------------------------------------------- ch02.3 two_stage_train


def books_first_stage(w1, x, log):
    features = (w1 * x).detach()
    log.append(features)
    return features


BOOK_TABLE = {0: (46.875000, 1.3750), 9: (11.521060, 3.7071), 99: (0.000009, 5.9979)}


@pytest.mark.task("ch02.3")
@pytest.mark.points(2)
def test_the_books_table_and_the_repair():
    book = ag.run_two_stage(books_first_stage, 400, 0.02)
    for step, (loss, w2) in BOOK_TABLE.items():
        assert book.losses[step] == pytest.approx(loss, abs=5e-7), (
            f"the book's run: step {step} loss {book.losses[step]:.6f}, the table says {loss:.6f}"
        )
        assert book.w2s[step + 1] == pytest.approx(w2, abs=5e-5), (
            f"the book's run: w2 after step {step} is {book.w2s[step + 1]:.4f}, the table says {w2}"
        )
    assert book.w2s[400] == pytest.approx(6.0, abs=5e-5) and set(book.w1s) == {0.5}, (
        "the book's run should end with w2 6.0000 and w1 frozen at 0.5 throughout"
    )
    fixed = ag.two_stage_train(400, 0.02)
    assert fixed.w1s[1] != 0.5, (
        f"two_stage_train(400, 0.02) still reproduces the book's table: w1 stays at {fixed.w1s[-1]} "
        "and w2 ends at {:.4f} alone. The first stage's output is detached, so no gradient path "
        "leads back to w1; log a detached copy, but return the graph-connected tensor".format(
            fixed.w2s[-1]
        )
    )


@pytest.mark.task("ch02.3")
@pytest.mark.points(2)
def test_repaired_two_stage_moves_both_weights():
    r = ag.two_stage_train(400, 0.02)
    assert r.w1s[1] == pytest.approx(1.25, abs=1e-5), (
        f"after step 0, w1 = {r.w1s[1]}; with both stages connected its gradient is "
        "mean(2*(w2*w1*x - y)*w2*x) = -37.5, so w1 should be 0.5 + 0.02*37.5 = 1.25"
    )
    assert r.w1 * r.w2 == pytest.approx(3.0, abs=1e-4) and r.losses[-1] < 1e-9, (
        f"after 400 steps w1*w2 = {r.w1 * r.w2:.5f} and loss {r.losses[-1]:.3g}; expected w1*w2 -> 3 "
        "and a loss near 0 when both weights learn"
    )
    assert r.w1 == pytest.approx(1.6931, abs=2e-4) and r.w2 == pytest.approx(1.7719, abs=2e-4), (
        f"after 400 steps w1={r.w1:.4f}, w2={r.w2:.4f}; the measured run ends at w1 1.6931, w2 1.7719"
    )


@pytest.mark.task("ch02.3")
def test_feature_log_holds_each_steps_features():
    r = ag.two_stage_train(5, 0.02)
    assert len(r.features) == 5, f"5 steps should log 5 feature tensors, got {len(r.features)}"
    for k, f in enumerate(r.features):
        assert torch.allclose(f, r.w1s[k] * X, atol=1e-5), (
            f"features[{k}] = {f.tolist()}, expected w1s[{k}] * X = {(r.w1s[k] * X).tolist()}: "
            "log the first stage's output of every step"
        )
        assert not f.requires_grad, (
            f"features[{k}] requires grad: the log should hold a detached copy, or every step's "
            "graph stays alive in memory"
        )
    assert r.features[1][0].item() == pytest.approx(1.25, abs=1e-5), (
        f"features[1] = {r.features[1].tolist()}: w1 never moved, so the first stage keeps producing "
        "0.5*x; the returned features must stay on the graph (detach only the logged copy)"
    )


# ---------------------------------------------------------------- ch02.4 accumulated_grad


def small_model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))


def full_batch_grad(model, loss_fn, batch):
    clone = copy.deepcopy(model)
    clone.zero_grad(set_to_none=True)
    loss_fn(clone(batch[0]), batch[1]).backward()
    return {n: p.grad.clone() for n, p in clone.named_parameters()}


def compare(got, want, call):
    for name, g in want.items():
        assert name in got, f"{call} returned no gradient for {name!r}"
        ratio = (got[name].norm() / g.norm()).item()
        assert torch.allclose(got[name], g, rtol=1e-5, atol=1e-6), (
            f"{call}: the gradient of {name} differs from the full-batch gradient "
            f"(norm ratio {ratio:.3f}). A ratio near n_micro means each micro-batch loss needs "
            "scaling by its share of the batch; other ratios suggest stale gradients (zero_grad "
            "before accumulating) or gradients lost between micro-batches"
        )


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_equals_full_batch():
    model = small_model(0)
    g = torch.Generator().manual_seed(1)
    batch = (torch.randn(12, 4, generator=g), torch.randn(12, 4, generator=g))
    want = full_batch_grad(model, nn.functional.mse_loss, batch)
    got = ag.accumulated_grad(model, nn.functional.mse_loss, batch, 4)
    compare(got, want, "accumulated_grad(model, mse_loss, 12 examples, n_micro=4)")
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.allclose(p.grad, got[name]), (
            f"after accumulated_grad, {name}.grad does not hold the returned gradient: leave the "
            "accumulated gradient in .grad, ready for optimizer.step()"
        )


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_ignores_stale_gradients():
    model = small_model(3)
    g = torch.Generator().manual_seed(4)
    batch = (torch.randn(8, 4, generator=g), torch.randn(8, 4, generator=g))
    model(batch[0] * 5).pow(2).mean().backward()  # an earlier step's gradient is still in .grad
    want = full_batch_grad(model, nn.functional.mse_loss, batch)
    got = ag.accumulated_grad(model, nn.functional.mse_loss, batch, 2)
    compare(got, want, "accumulated_grad on a model whose .grad held an earlier step's gradient")
