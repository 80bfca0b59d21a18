"""Public tests for ch00 — run with `pytest exercises/ch00` (add `--impl solutions` to
see the reference pass)."""

import io
import math
import struct
import tempfile
from pathlib import Path

import pytest
import torch

from harness import backward, judge
from harness.probe import probe
from harness.target import chapter_module

tl = chapter_module("ch00", "training_loop")

BOOK_XS, BOOK_YS = [1.0, 2.0, 3.0, 4.0], [5.0, 10.0, 15.0, 20.0]


def mse(w, xs, ys):
    return sum((w * x - y) ** 2 for x, y in zip(xs, ys)) / len(xs)


@pytest.mark.task("ch00.1")
def test_gradient_at_the_books_point():
    g = tl.gradient_at(1.0, 2.0, 6.0)
    assert isinstance(g, float), (
        f"gradient_at should return a Python float, got {type(g).__name__} (use .item())"
    )
    judge.number(
        g,
        -16.0,
        "gradient_at(w=1, x=2, target=6) should be -16: the loss is (x*w - target)**2, so the "
        "chain rule gives 2*x*(x*w - target); check the square and the sign of the residual",
        rel=1e-6,
        abs=1e-12,
    )


@pytest.mark.task("ch00.1")
def test_gradient_at_follows_the_chain_rule():
    for w, x, t in [(0.5, 3.0, 1.0), (-2.0, 1.5, 4.0), (3.0, -2.0, -7.0)]:
        g = tl.gradient_at(w, x, t)
        expected = 2 * x * (x * w - t)
        judge.number(
            g,
            expected,
            f"gradient_at(w={w}, x={x}, target={t}) should be {expected} = 2*x*(x*w - target)",
            rel=1e-5,
            abs=1e-12,
        )


@probe
def with_autograd_watched(name, *args):
    """``tl.<name>(*args)``, and how many times autograd's engine ran a backward pass
    meanwhile (``loss.backward()``, ``torch.autograd.grad``, ``torch.func.grad`` all go
    through it); None for the count where this torch has no such hook."""
    runs = []
    with backward.watched(runs.append) as watching:
        result = getattr(tl, name)(*args)
    return result, len(runs) if watching else None


def judge_gradient_from_autograd(w, x, target):
    """gradient_at(w, x, target) is 2*x*(x*w - target), and autograd ran a backward pass
    while it was computed (the reading's promise: autograd finds it, not a formula)."""
    g, runs = with_autograd_watched("gradient_at", w, x, target)
    want = 2 * x * (x * w - target)
    judge.number(
        g,
        want,
        f"gradient_at(w={w}, x={x}, target={target}) should be 2*x*(x*w - target) = {want:g}",
        rel=1e-5,
        abs=1e-12,
    )
    assert runs is None or runs >= 1, (
        f"gradient_at({w}, {x}, {target}) returned the right number, but autograd never ran a "
        "backward pass meanwhile: the exercise is to let autograd find the derivative "
        "(w as a tensor with requires_grad=True, loss.backward(), then w.grad), not to write "
        "out the formula"
    )


@pytest.mark.task("ch00.1")
def test_gradient_at_lets_autograd_find_it():
    judge_gradient_from_autograd(1.5, -0.5, 0.75)


@pytest.mark.task("ch00.2")
@pytest.mark.points(2)
def test_one_step_from_the_book():
    result = tl.train_scalar([2.0], [6.0], w0=1.0, lr=0.1, steps=1)
    judge.number(
        result.w,
        2.6,
        "one step from w0=1 on x=2, target=6, lr=0.1 should end at w=2.6 "
        "(w - lr * gradient, with gradient -16)",
        abs=1e-5,
    )
    row = (
        "after one step, expected ws=[1.0] and losses=[16.0] (lists of floats): row 0 records "
        "the w that made the first prediction and that prediction's loss, before the update"
    )
    judge.number(result.ws, [1.0], f"ws: {row}", rel=1e-6, abs=1e-12)
    judge.number(result.losses, [16.0], f"losses: {row}", rel=1e-6, abs=1e-12)


@pytest.mark.task("ch00.2")
def test_rows_describe_one_coherent_state():
    result = tl.train_scalar(BOOK_XS, BOOK_YS, w0=0.0, lr=0.01, steps=6)
    assert len(result.ws) == len(result.losses) == 6, (
        f"6 steps should give 6 rows, got {len(result.ws)} ws and {len(result.losses)} losses"
    )
    for k, (w, loss) in enumerate(zip(result.ws, result.losses)):
        # a row agrees with itself only if it holds numbers: NaN rows would agree vacuously
        for name, v in (("ws", w), ("losses", loss)):
            assert type(v) is float and math.isfinite(v), (
                f"{name}[{k}] is {v!r}: each row holds finite Python floats (use .item())"
            )
        want = mse(w, BOOK_XS, BOOK_YS)
        summed = judge.is_number(loss, want * len(BOOK_XS), rel=1e-4, abs=1e-12)
        judge.number(
            loss,
            want,
            f"row {k}: ws[{k}]={w} gives a mean squared error of {want:.4f}: "
            + (
                f"losses[{k}] is the sum of the {len(BOOK_XS)} squared errors, not their mean"
                if summed
                else "record w and the loss of the prediction it made before the update changes w"
            ),
            rel=1e-4,
            abs=1e-12,
        )


@pytest.mark.task("ch00.2")
def test_every_step_uses_only_its_own_gradient():
    xs, ys, lr, w0 = BOOK_XS, BOOK_YS, 0.01, 0.0
    result = tl.train_scalar(xs, ys, w0=w0, lr=lr, steps=5)
    w = descend(xs, ys, w0, lr, 5)
    if judge.is_number(result.w, descend(xs, ys, w0, lr, 5, stale=True), rel=1e-4, abs=1e-12):
        why = (
            "that is where w ends when the gradient is not zeroed each step: .grad accumulates "
            "the sum of all previous gradients"
        )
    elif judge.is_number(result.w, descend(xs, ys, w0, lr, 5, summed=True), rel=1e-4, abs=1e-12):
        why = (
            "that is where w ends when the loss sums the squared errors instead of taking their "
            f"mean: every step is {len(xs)} times too large"
        )
    else:
        why = "each step moves w by lr times the gradient of that step's mean squared error alone"
    judge.number(
        result.w,
        w,
        f"after 5 steps gradient descent on the mean squared error gives w={w:.5f}: {why}",
        rel=1e-4,
        abs=1e-12,
    )


def descend(xs, ys, w, lr, steps, stale=False, summed=False):
    """w after ``steps`` of gradient descent on the mean squared error, or with the mistakes
    named: gradients kept from earlier steps (``stale``), the squared errors summed."""
    kept = 0.0
    for _ in range(steps):
        grad = sum(2 * x * (w * x - y) for x, y in zip(xs, ys)) / (1 if summed else len(xs))
        kept = kept + grad if stale else grad
        w -= lr * kept
    return w


def book_run(lr, steps=40):
    """The reading's run (xs = 1..4, y = 5x, w0 = 0) in float32, one loss per step."""
    x = torch.tensor(BOOK_XS)
    y = torch.tensor(BOOK_YS)
    w, losses = torch.tensor(0.0), []
    for _ in range(steps):
        residual = w * x - y
        losses.append((residual**2).mean().item())
        w = w - lr * (2 * x * residual).mean()
    return losses


@pytest.mark.task("ch00.3")
@pytest.mark.parametrize(
    "lr, expected", [(0.001, "slow"), (0.01, "converging"), (0.1, "converging")]
)
def test_classify_the_books_learning_rates(lr, expected):
    losses = book_run(lr)  # the reading's runs, independent of your train_scalar
    got = tl.classify_curve(losses)
    assert got == expected, (
        f"classify_curve on the lr={lr} run (losses {losses[0]:.3g} -> {losses[-1]:.3g}) said {got!r}, expected "
        f"{expected!r}; look at where the curve ends relative to where it started (converging "
        "means below 10% of the start)"
    )


@pytest.mark.task("ch00.3")
def test_classify_the_books_diverging_run():
    losses = book_run(1.0)  # overflows to inf, then inf - inf gives nan
    got = tl.classify_curve(losses)
    assert got == "diverging", (
        f"classify_curve on the lr=1.0 run (losses {losses[0]:.3g} -> {losses[-1]}) said {got!r}, "
        "expected 'diverging': the run overflowed, and nan compares False with everything, so "
        "a check like last > 2 * first misses it; test math.isfinite explicitly"
    )


@pytest.mark.task("ch00.3")
def test_classify_an_oscillating_curve():
    losses = [1.0, 0.6, 0.95, 0.55, 0.9, 0.6, 0.92, 0.58, 0.93, 0.57, 0.97]
    got = tl.classify_curve(losses)
    assert got == "oscillating", (
        f"a loss that jumps up and down between ~0.55 and ~0.95 for 10 steps was classified {got!r}; "
        "count how often it rises as well as where it ends"
    )


CLEAR_CUT = {  # the reading's clear-cut shapes, each at a scale of its own: (losses, name, why)
    "geometric decay": (
        [1e-3 * 0.7**k for k in range(30)],
        "converging",
        "it fell to a tiny fraction of its start",
    ),
    "a zigzag on a decay": (
        [50.0 * 0.7**k * (1 + 0.3 * (-1) ** k) for k in range(30)],
        "converging",
        "it clearly fell, to a tiny fraction of its start: rises along the way do not make a "
        "curve oscillating, which means up and down without a clear fall",
    ),
    "geometric growth": (
        [2e-4 * 1.2**k for k in range(30)],
        "diverging",
        "it ends far above its start (about 200 times)",
    ),
    "a slow crawl": (
        [4e4 - 300.0 * k for k in range(30)],
        "slow",
        "it falls at every step but ends well above 10% of its start",
    ),
    "a zigzag back where it started": (
        [7e5 * (1 + 0.2 * (-1) ** k) for k in range(31)],
        "oscillating",
        "it goes up and down at every step and ends about where it started",
    ),
    "an overflow to -inf": (
        [3.0, 30.0, 3e20, float("-inf")],
        "diverging",
        "a loss that is no longer finite has diverged (test math.isfinite, not a comparison)",
    ),
}


@pytest.mark.task("ch00.3")
def test_classify_clear_cut_curves_at_any_scale():
    for name, (losses, expected, why) in CLEAR_CUT.items():
        got = tl.classify_curve(losses)
        if got == expected:
            continue
        unit = [v / losses[0] for v in losses]  # the same shape, starting at 1
        if tl.classify_curve(unit) == expected:
            why = (
                f"the same curve divided by its start is called {expected!r}: the thresholds "
                "are fractions of the starting loss, so a curve's scale never changes its name"
            )
        assert got == expected, (
            f"classify_curve on {name} (from {losses[0]:.3g} to {losses[-1]:.3g} in "
            f"{len(losses)} steps) said {got!r}, expected {expected!r}: {why}"
        )


@probe
def plotted(losses, name="curve.png"):
    """plot_losses(losses, <fresh folder>/name): the bytes of the file at that path (None if
    none), the names of any other files it wrote there, the path it was given, what it
    returned, how many pyplot figures it left open, and the list it was given, afterwards."""
    import sys

    before = (
        set(sys.modules["matplotlib.pyplot"].get_fignums())
        if "matplotlib.pyplot" in sys.modules
        else set()
    )
    given = list(losses)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / name
        returned = tl.plot_losses(given, out)
        data = out.read_bytes() if out.is_file() else None
        others = sorted(p.name for p in Path(folder).iterdir() if p != out)
    pyplot = sys.modules.get("matplotlib.pyplot")
    left_open = len(set(pyplot.get_fignums()) - before) if pyplot is not None else 0
    if not isinstance(returned, str | Path | None):
        returned = f"<a {type(returned).__name__}>"
    return {
        "png": data,
        "others": others,
        "path": out,
        "returned": returned,
        "left_open": left_open,
        "losses_after": given,
    }


def png_problem(data: bytes | None) -> str | None:
    """Why ``data`` is not a plotted PNG (None when it is one): the file must exist,
    decode as a PNG of a sensible size and show more than one colour."""
    if data is None:
        return "no file was written at the given path"
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 33:
        return f"the file is not a PNG (it starts with {data[:8]!r})"
    width, height = struct.unpack(">II", data[16:24])
    if not (50 <= width <= 5000 and 50 <= height <= 5000):
        return f"the PNG is {width}x{height} pixels; a learning curve needs a real figure"
    import matplotlib.pyplot as plt

    try:
        pixels = plt.imread(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - any decoding failure means "not a PNG"
        return f"the file does not decode as a PNG ({type(exc).__name__})"
    if pixels.reshape(-1, pixels.shape[-1]).std(0).max() == 0:
        return "the PNG is a single flat colour: nothing was drawn"
    return None


@pytest.mark.task("ch00.4")
def test_plot_losses_writes_a_png():
    problem = png_problem(plotted([4.0, 2.0, 1.0, 0.5])["png"])
    assert problem is None, (
        f"plot_losses([4, 2, 1, 0.5], path): {problem}; draw the curve with matplotlib "
        "(headless: matplotlib.use('Agg')) and savefig to the path you were given"
    )


@pytest.mark.task("ch00.4")
def test_plot_losses_returns_the_path_and_closes_its_figure():
    seen = plotted([3.0, 1.0, 0.5, 0.4, 0.35])
    problem = png_problem(seen["png"])
    assert problem is None, (
        f"plot_losses(losses, path): {problem}; a figure must be drawn and saved before "
        "returning its path and closing it means anything"
    )
    returned = seen["returned"]
    assert isinstance(returned, str | Path) and Path(returned) == seen["path"], (
        f"plot_losses(losses, path) returned {returned!r}; it should return the path it wrote "
        f"({seen['path'].name})"
    )
    assert seen["left_open"] == 0, (
        f"plot_losses left {seen['left_open']} matplotlib figure(s) open: pyplot keeps every "
        "figure alive until it is closed, so a training script that plots each epoch leaks "
        "memory; plt.close(fig) after savefig"
    )


SIGNATURES = {  # how the first bytes of a file name its format
    b"\xff\xd8\xff": "JPEG",
    b"%PDF": "PDF",
    b"<?xml": "SVG",
    b"<svg": "SVG",
    b"%!PS": "PostScript",
    b"II*\x00": "TIFF",
    b"MM\x00*": "TIFF",
}


def format_problem(seen) -> str | None:
    """Why the file plot_losses wrote at its path is not a plotted PNG, naming the format it
    did write and the mechanism (None when it is a PNG)."""
    data = seen["png"]
    if data is None and seen["others"]:
        return (
            f"nothing is at {seen['path'].name!r}, but {', '.join(seen['others'])} appeared "
            "beside it: savefig adds a suffix of its own to a name that has none, so the path "
            "you return holds no file; pass format='png' and savefig writes exactly that path"
        )
    problem = png_problem(data)
    if problem is None or data is None:
        return problem
    written = next((fmt for sig, fmt in SIGNATURES.items() if data.startswith(sig)), None)
    if written is not None:
        return (
            f"the file holds {written}, not PNG: savefig picks the format from the path's "
            "suffix unless it is told, so pass format='png' (the contract is a PNG whatever "
            "the file is called)"
        )
    return problem


@pytest.mark.task("ch00.4")
def test_plot_losses_writes_a_png_whatever_the_suffix():
    seen = plotted([4.0, 2.0, 1.0, 0.5], "curve.jpg")
    problem = format_problem(seen)
    assert problem is None, f"plot_losses(losses, 'curve.jpg'): {problem}"
