"""Hidden tests for ch06a: other sizes, seeds and edge cases than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import math

import pytest
import torch

from exercises.ch06a.test_feature_space import (  # helpers shared with the public twin
    loop_masked_mean,
    loop_scores,
)
from harness.target import chapter_module

fs = chapter_module("ch06a", "feature_space")
FMAX = torch.finfo(torch.float32).max


def gen(seed):
    return torch.Generator().manual_seed(seed)


def lengths_mask(lengths, T):
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]  # (B, T)


# ---- ch06a.1 masked_mean -----------------------------------------------------------


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)
@pytest.mark.parametrize("fill", [1e30, -1e30, FMAX, -FMAX, 12345.0], ids=str)
def test_masked_mean_is_blind_to_any_padding(fill):
    x = torch.randn(5, 5, 5, generator=gen(11))
    mask = lengths_mask([5, 3, 1, 4, 2], 5)
    want = loop_masked_mean(x, mask)
    noisy = x.clone()
    noisy[~mask] = fill
    got = fs.masked_mean(noisy, mask, dim=1)
    assert torch.isfinite(got).all() and torch.allclose(got, want, atol=1e-5), (
        f"with every padded slot set to {fill:g}, masked_mean no longer equals the mean of the "
        "valid positions: padded values must never enter the sum"
    )


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)
def test_masked_mean_other_layouts():
    x = torch.randn(6, 3, generator=gen(12))  # (B, T) without a feature axis
    mask = torch.tensor([[1, 0, 1], [0, 0, 1], [1, 1, 1], [1, 0, 0], [0, 1, 1], [1, 1, 0]])
    got = fs.masked_mean(x, mask, dim=-1)
    want = loop_masked_mean(x[..., None], mask.bool())[:, 0]
    assert tuple(got.shape) == (6,) and torch.allclose(got, want, atol=1e-5), (
        "masked_mean over the last dimension of x[B, T] with a 0/1 integer mask must give the "
        "per-row mean of the valid entries"
    )
    xt = torch.randn(4, 3, 2, generator=gen(13))  # (T, B, E): time first
    mt = lengths_mask([4, 2, 3], 4).T  # (T, B)
    got = fs.masked_mean(xt, mt, dim=0)
    want = loop_masked_mean(xt.transpose(0, 1), mt.T)
    assert tuple(got.shape) == (3, 2) and torch.allclose(got, want, atol=1e-5), (
        "masked_mean(x[T, B, E], mask[T, B], dim=0) must average over the time axis, per example"
    )


@pytest.mark.task("ch06a.1")
def test_masked_mean_empty_rows_and_gradients():
    x = torch.randn(3, 4, 2, generator=gen(14), requires_grad=True)
    mask = lengths_mask([0, 2, 4], 4)
    got = fs.masked_mean(x, mask, dim=1)
    assert torch.isfinite(got).all() and torch.equal(got[0].detach(), torch.zeros(2)), (
        "a row with no valid position must give 0, not nan (0 / 0)"
    )
    got.sum().backward()
    pad_grad = x.grad[~mask]
    assert torch.all(pad_grad == 0), (
        "the gradient reaching padded positions must be exactly 0: padding must not influence "
        "the result"
    )


# ---- ch06a.2 sequence_scores (repair) ----------------------------------------------


@pytest.mark.task("ch06a.2")
@pytest.mark.points(2)
@pytest.mark.parametrize("B, T, E", [(1, 5, 3), (6, 6, 6), (3, 9, 16)])
def test_sequence_scores_other_sizes(B, T, E):
    torch.manual_seed(B * 100 + T)
    head = torch.nn.Linear(E, 1)
    x = torch.randn(B, T, E, generator=gen(E))
    lengths = [max(1, T - 2 * b) for b in range(B)]
    mask = lengths_mask(lengths, T)
    x[~mask] = 1e4  # padding that would dominate any average it leaks into
    with torch.no_grad():
        got = fs.sequence_scores(x, mask, head)
        want = loop_scores(x, mask, head)
    assert tuple(got.shape) == (B,), (
        f"sequence_scores on x[{B}, {T}, {E}] must return shape ({B},), got {tuple(got.shape)}: "
        "exactly one score per example, whatever B is"
    )
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4), (
        f"sequence_scores on x[{B}, {T}, {E}] is not the mean of the valid positions' scores"
    )


@pytest.mark.task("ch06a.2")
@pytest.mark.points(2)
def test_sequence_scores_default_head_ignores_padding():
    x = torch.randn(5, 5, 5, generator=gen(21))
    mask = lengths_mask([1, 5, 2, 4, 3], 5)
    want = loop_scores(x, mask, lambda v: v.mean())
    for fill in (0.0, 1e6, -1e6):
        noisy = x.clone()
        noisy[~mask] = fill
        got = fs.sequence_scores(noisy, mask)
        assert tuple(got.shape) == (5,), (
            f"sequence_scores without a head returned shape {tuple(got.shape)} for 5 examples; "
            "one score per example is shape (5,)"
        )
        assert torch.allclose(got, want, atol=1e-4), (
            f"sequence_scores without a head changes when padded positions hold {fill:g}: "
            "only valid positions may count"
        )


@pytest.mark.task("ch06a.2")
def test_sequence_scores_with_a_nonlinear_head():
    torch.manual_seed(22)
    head = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    x = torch.randn(4, 6, 6, generator=gen(22)) * 2
    mask = lengths_mask([6, 2, 5, 1], 6)
    with torch.no_grad():
        got = fs.sequence_scores(x, mask, head)
        want = loop_scores(x, mask, head)
    assert tuple(got.shape) == (4,) and torch.allclose(got, want, atol=1e-5), (
        "with a head that is not linear, sequence_scores must score every position first and "
        "then average the valid positions' scores; averaging the features before the head is "
        "only the same for a linear head"
    )


# ---- ch06a.3 hinge_loss ------------------------------------------------------------


@pytest.mark.task("ch06a.3")
@pytest.mark.points(2)
def test_hinge_loss_random_and_integer_labels():
    scores = torch.randn(50, generator=gen(31)) * 2
    y = torch.where(torch.rand(50, generator=gen(32)) < 0.5, -1, 1)  # int64 labels
    want = [max(0.0, 1 - float(yi) * float(si)) for si, yi in zip(scores, y)]
    got = fs.hinge_loss(scores, y, reduction="none")
    assert torch.allclose(got.double(), torch.tensor(want, dtype=torch.float64), atol=1e-6), (
        "hinge_loss per example must be max(0, 1 - y * score), also for integer labels"
    )
    assert float(fs.hinge_loss(scores, y)) == pytest.approx(sum(want) / 50, rel=1e-5), (
        "the default reduction is the mean over examples"
    )


@pytest.mark.task("ch06a.3")
def test_hinge_loss_gradient_and_shape_checks():
    scores = torch.tensor([3.0, 0.2, -0.5, 1.5], requires_grad=True)
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    fs.hinge_loss(scores, y, reduction="sum").backward()
    want = torch.tensor([0.0, -1.0, 1.0, 1.0])  # -y where the margin is violated, else 0
    assert scores.grad is not None and torch.allclose(scores.grad, want), (
        "the hinge's gradient is -y for examples inside the margin and 0 outside it"
    )
    with pytest.raises(ValueError):
        fs.hinge_loss(torch.zeros(3), torch.ones(3, 1))
        pytest.fail("hinge_loss must raise ValueError when scores and labels differ in shape")


# ---- ch06a.4 train_linear_svm ------------------------------------------------------


def objective(w, b, X, y, C):
    return 0.5 * float(w.double() @ w.double()) + C * float(
        torch.clamp(1 - y.double() * (X.double() @ w.double() + b), min=0).sum()
    )


@pytest.mark.task("ch06a.4")
@pytest.mark.points(2)
def test_svm_needs_its_bias():
    X = torch.randn(200, 3, generator=gen(41)) + 1.5  # every feature around 1.5
    keep = (X[:, 0] - 1.5).abs() > 0.5  # a clear gap around x0 = 1.5
    X = X[keep]
    y = torch.where(X[:, 0] > 1.5, 1.0, -1.0)
    w, b = fs.train_linear_svm(X, y, C=1.0)
    acc = float(((X @ w + float(b)).sign() == y).float().mean())
    assert acc == 1.0, (
        f"on data separable by the plane x0 = 1.5 (away from the origin), training accuracy is "
        f"{acc:.3f}: the plane needs an offset, so the bias b must be learned too"
    )


def grid_minimum(x, y, C):
    """The 1-D soft-margin objective minimized on a coarse grid, then a fine one around it."""

    def search(ws, bs):
        Wg, Bg = torch.meshgrid(ws, bs, indexing="ij")  # (len(ws), len(bs))
        margins = y[:, None, None] * (x[:, None, None] * Wg + Bg)  # (N, len(ws), len(bs))
        obj = 0.5 * Wg**2 + C * torch.clamp(1 - margins, min=0).sum(0)
        k = int(obj.argmin())
        return float(obj.min()), float(Wg.flatten()[k]), float(Bg.flatten()[k])

    f64 = torch.float64
    _, w0, b0 = search(torch.linspace(0, 4, 201, dtype=f64), torch.linspace(-3, 3, 301, dtype=f64))
    best, _, _ = search(
        torch.linspace(w0 - 0.05, w0 + 0.05, 201, dtype=f64),
        torch.linspace(b0 - 0.05, b0 + 0.05, 201, dtype=f64),
    )
    return best


@pytest.mark.task("ch06a.4")
@pytest.mark.points(2)
def test_svm_reaches_the_optimum_of_a_one_dimensional_problem():
    X = torch.tensor([[-3.0], [-2.0], [-1.5], [0.4], [-0.2], [0.5], [1.0], [2.5], [3.0]])
    y = torch.tensor([-1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # overlapping classes
    C = 0.5
    w, b = fs.train_linear_svm(X, y, C=C)
    best = grid_minimum(X[:, 0].double(), y.double(), C)
    got = objective(w, float(b), X, y, C)
    assert got <= best * 1.02 + 1e-3, (
        f"train_linear_svm with C={C} on overlapping 1-D data reaches objective {got:.4f}, but "
        f"{best:.4f} is attainable: minimize 0.5*||w||^2 + C * (sum, not mean, of the hinge losses)"
    )


@pytest.mark.task("ch06a.4")
def test_svm_c_trades_margin_for_fit():
    X = torch.randn(30, 50, generator=gen(43))
    y = torch.where(X[:, :5].sum(1) > 0, 1.0, -1.0)
    w_small, _ = fs.train_linear_svm(X, y, C=0.001)
    w_large, _ = fs.train_linear_svm(X, y, C=10.0)
    n_small, n_large = float(w_small.norm()), float(w_large.norm())
    assert n_small < 0.5 * n_large, (
        f"||w|| was {n_small:.3g} with C=0.001 and {n_large:.3g} with C=10: a small C weights the "
        "0.5*||w||^2 term more, so it must give a much shorter w"
    )


# ---- ch06a.5 distance_concentration ------------------------------------------------


@pytest.mark.task("ch06a.5")
@pytest.mark.points(2)
def test_distance_concentration_uses_its_generator():
    a = fs.distance_concentration([3, 300], 40, gen(51))
    torch.manual_seed(999)  # the global generator must not matter
    b = fs.distance_concentration([3, 300], 40, gen(51))
    c = fs.distance_concentration([3, 300], 40, gen(52))
    assert a == b, f"the same generator seed gave {a} and then {b}: draw the points from generator"
    assert a != c, "different generator seeds gave identical contrasts: draw from generator"


@pytest.mark.task("ch06a.5")
@pytest.mark.points(2)
def test_distance_concentration_values_and_order():
    got = fs.distance_concentration([1000, 5], 60, gen(53))
    assert len(got) == 2 and got[0] < got[1], (
        f"contrasts for dims [1000, 5] were {got}: values must follow the order of dims"
    )
    ref = []
    for seed in range(5):  # the same quantity, measured independently
        p = torch.rand(60, 1000, generator=gen(600 + seed), dtype=torch.float64)
        d = torch.pdist(p)
        ref.append(float((d.max() - d.min()) / d.min()))
    lo, hi = min(ref) / 1.5, max(ref) * 1.5
    assert lo < got[0] < hi, (
        f"relative contrast of 60 uniform points in 1000-D was {got[0]:.3f}; independent "
        f"measurements give {min(ref):.3f}..{max(ref):.3f}: (max - min) / min of the plain "
        "(not squared) distances over distinct pairs"
    )


@pytest.mark.task("ch06a.5")
def test_distance_concentration_two_points():
    got = fs.distance_concentration([4, 40], 2, gen(54))
    assert got == [0.0, 0.0] or all(math.isclose(v, 0.0, abs_tol=1e-9) for v in got), (
        f"with two points there is one distance, so max == min and the contrast is 0; got {got}"
    )
