"""Hidden tests for ch00: other points, sizes and curves than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import math
import random

import pytest

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
    result = tl.train_scalar([1.0, 2.0], [2.0, 4.0], w0=0.7, lr=0.1, steps=0)
    assert result.w == pytest.approx(0.7) and len(result.ws) == 0 and len(result.losses) == 0, (
        "zero training steps must return w0 unchanged and empty histories"
    )


@pytest.mark.task("ch00.2")
def test_training_reaches_the_least_squares_weight():
    xs, ys = [1.0, 2.0, 3.0], [2.0, 4.5, 5.5]
    best = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    result = tl.train_scalar(xs, ys, w0=-1.0, lr=0.05, steps=200)
    assert result.w == pytest.approx(best, rel=1e-3), (
        f"200 stable steps should reach the least-squares weight {best:.4f}, got {result.w:.4f}: "
        "the update must move w against the gradient of the mean squared error"
    )


@pytest.mark.task("ch00.3")
@pytest.mark.parametrize(
    "losses, expected",
    [
        ([10.0 * 0.7**k for k in range(30)], "converging"),
        ([10.0 - 0.05 * k for k in range(30)], "slow"),
        ([1.0 * 1.5**k for k in range(30)], "diverging"),
        ([3.0, 50.0, 4000.0, float("inf"), float("nan"), float("nan")], "diverging"),
        ([2.0, 1.0, 1.9, 1.1, 2.0, 1.0, 1.95, 1.05, 2.0, 1.0, 1.9], "oscillating"),
    ],
    ids=["geometric-decay", "linear-crawl", "geometric-growth", "overflow-to-nan", "zigzag"],
)
def test_classify_other_curves(losses, expected):
    got = tl.classify_curve(losses)
    assert got == expected, f"a curve of this shape should be called {expected!r}, got {got!r}" + (
        " — nan compares False with everything, so test for finiteness explicitly"
        if not all(map(math.isfinite, losses))
        else ""
    )


@pytest.mark.task("ch00.4")
def test_plot_survives_an_overflowing_curve(tmp_path):
    out = tmp_path / "diverged.png"
    tl.plot_losses([1.0, 100.0, 1e30, float("inf"), float("nan")], out)
    assert out.exists() and out.read_bytes()[:4] == b"\x89PNG", (
        "plot_losses must still write a PNG when the curve overflows to inf/nan (the diverging case is the one worth seeing)"
    )
