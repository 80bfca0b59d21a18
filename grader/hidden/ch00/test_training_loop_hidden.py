"""Hidden tests for ch00: other points, sizes and curves than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import random

import pytest

from exercises.ch00.test_training_loop import plotted, png_problem
from harness.target import chapter_module

tl = chapter_module("ch00", "training_loop")


def gd(xs, ys, w, lr, steps):
    """Plain gradient descent on the mean squared error, as a slow obvious loop."""
    ws, losses = [], []
    for _ in range(steps):
        ws.append(w)
        losses.append(sum((w * x - y) ** 2 for x, y in zip(xs, ys)) / len(xs))
        w -= lr * sum(2 * x * (w * x - y) for x, y in zip(xs, ys)) / len(xs)
    return w, ws, losses


@pytest.mark.task("ch00.1")
def test_gradient_at_random_points():
    """gradient_at equals 2*x*(x*w - target) at random points."""
    rng = random.Random(7)
    for _ in range(20):
        w, x, t = (rng.uniform(-3, 3) for _ in range(3))
        g = tl.gradient_at(w, x, t)
        assert g == pytest.approx(2 * x * (x * w - t), rel=1e-4, abs=1e-5), (
            "gradient_at must equal d/dw (x*w - target)**2 = 2*x*(x*w - target) at any point"
        )


@pytest.mark.task("ch00.2")
@pytest.mark.points(2)
def test_trajectory_matches_gradient_descent_on_the_mean():
    """train_scalar's weights, losses and final w follow gradient descent on the mean squared error."""
    xs, ys = [0.5, -1.0, 2.0], [1.0, -3.0, 3.5]
    w, ws, losses = gd(xs, ys, w=0.3, lr=0.05, steps=12)
    result = tl.train_scalar(xs, ys, w0=0.3, lr=0.05, steps=12)
    assert list(result.ws) == pytest.approx(ws, rel=1e-4, abs=1e-6), (
        "the recorded weights differ from gradient descent on the *mean* squared error; "
        "check the mean (not the sum), the zeroing of .grad each step, and recording before the update"
    )
    assert list(result.losses) == pytest.approx(losses, rel=1e-4, abs=1e-6), (
        "the recorded losses differ from the mean squared error of the recorded weights' predictions"
    )
    assert result.w == pytest.approx(w, rel=1e-4), (
        "the final weight is not the one after the last update"
    )


@pytest.mark.task("ch00.2")
def test_zero_steps_changes_nothing():
    """Zero steps return w0 unchanged and empty histories."""
    result = tl.train_scalar([1.0, 2.0], [2.0, 4.0], w0=0.7, lr=0.1, steps=0)
    assert result.w == pytest.approx(0.7) and len(result.ws) == 0 and len(result.losses) == 0, (
        "zero training steps must return w0 unchanged and empty histories"
    )


@pytest.mark.task("ch00.2")
def test_training_reaches_the_least_squares_weight():
    """200 stable steps reach the least-squares weight."""
    xs, ys = [1.0, 2.0, 3.0], [2.0, 4.5, 5.5]
    best = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    result = tl.train_scalar(xs, ys, w0=-1.0, lr=0.05, steps=200)
    assert result.w == pytest.approx(best, rel=1e-3), (
        f"200 stable steps should reach the least-squares weight {best:.4f}, got {result.w:.4f}: "
        "the update must move w against the gradient of the mean squared error"
    )


CURVES = {  # id: (losses, expected, the property a wrong answer violates)
    "geometric-decay": (
        [10.0 * 0.7**k for k in range(30)],
        "converging",
        "a loss that fell below 10% of its start is converging",
    ),
    "noisy-decay": (
        [10.0 * 0.7**k * (1 + 0.3 * (-1) ** k) for k in range(30)],
        "converging",
        "rises along the way do not make a curve oscillating when it clearly fell (here to a "
        "tiny fraction of its start): oscillating means up and down without a clear fall",
    ),
    "linear-crawl": (
        [10.0 - 0.05 * k for k in range(30)],
        "slow",
        "a loss that falls at every step but ends well above 10% of its start is slow",
    ),
    "small-scale-crawl": (
        [0.02 * 0.97**k for k in range(30)],
        "slow",
        "the thresholds are fractions of the starting loss, not absolute values: a curve that "
        "starts small and keeps 40% of it is slow",
    ),
    "geometric-growth": (
        [1.0 * 1.5**k for k in range(30)],
        "diverging",
        "a loss that ends far above its start is diverging even while it is still finite",
    ),
    "overflow-to-nan": (
        [3.0, 50.0, 4000.0, float("inf"), float("nan"), float("nan")],
        "diverging",
        "a loss that ends inf or nan is diverging; nan compares False with everything, so "
        "test for finiteness explicitly",
    ),
    "zigzag": (
        [2.0, 1.0, 1.9, 1.1, 2.0, 1.0, 1.95, 1.05, 2.0, 1.0, 1.95],
        "oscillating",
        "a loss that rises and falls at every step and ends about where it started is "
        "oscillating: count the rises, not only the two ends",
    ),
}


@pytest.mark.task("ch00.3")
@pytest.mark.parametrize("case", list(CURVES))
def test_classify_other_curves(case):
    """classify_curve names each kind of curve by its shape, relative to its start."""
    losses, expected, why = CURVES[case]
    got = tl.classify_curve(losses)
    assert got == expected, f"a {case} curve should be called {expected!r}, got {got!r}: {why}"


@pytest.mark.task("ch00.4")
def test_plot_survives_an_overflowing_curve():
    """plot_losses still writes a real PNG when the curve overflows to inf and nan."""
    problem = png_problem(plotted([1.0, 100.0, 1e30, float("inf"), float("nan")]))
    assert problem is None, (
        f"plot_losses must still write a PNG when the curve overflows to inf/nan (the "
        f"diverging case is the one worth seeing): {problem}"
    )
