"""Public tests for ch06a — run with `pytest exercises/ch06a` (add `--impl solutions` to
see the reference pass). B == T == E where a wrong axis would still run."""

import pytest
import torch
from torch import nn

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief, first_difference
except ImportError:  # (probes never use it)
    pass

fs = chapter_module("ch06a", "feature_space")
PROBES_USE = "gen make_head"  # what the probes use besides themselves (harness/strip.py)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def lengths_mask(lengths, T):
    """mask[b, t] is True for the first lengths[b] positions of example b."""
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]  # (B, T)


def loop_masked_mean(x, mask):
    """x[B, T, ...], mask[B, T]: the mean of each example's valid positions, one at a time."""
    rows = []
    for b in range(x.shape[0]):
        valid = [x[b, t] for t in range(x.shape[1]) if mask[b, t]]
        rows.append(torch.stack(valid).mean(0) if valid else torch.zeros_like(x[b, 0]))
    return torch.stack(rows)


def padded_with(x, mask, fill):
    """A copy of x[B, T, ...] with every padded slot (mask False) set to ``fill``."""
    out = x.clone()
    out[~mask.bool()] = fill
    return out


@probe
def masked_mean_backward(x, mask, dim, upstream):
    """masked_mean(x, mask, dim) on a leaf x, then backward(upstream): (result, x.grad)."""
    x = x.clone().requires_grad_(True)
    out = fs.masked_mean(x, mask, dim)
    out.backward(upstream)
    return out, x.grad


# ---- ch06a.1 masked_mean -----------------------------------------------------------


@pytest.mark.task("ch06a.1")
@pytest.mark.points(3)
def test_masked_mean_counts_only_valid_positions():
    x = torch.randn(4, 4, 4, generator=gen(1))  # B == T == E: a misplaced mask still runs
    mask = lengths_mask([4, 1, 3, 2], 4)
    got = fs.masked_mean(x, mask, dim=1)
    want = loop_masked_mean(x, mask)
    assert tuple(got.shape) == (4, 4), (
        f"masked_mean(x[4, 4, 4], mask[4, 4], dim=1) returned shape {tuple(got.shape)}, expected "
        "(4, 4): one mean feature vector per example"
    )
    judge.close(
        got,
        want,
        "masked_mean(x[4, 4, 4], mask[4, 4], dim=1) differs from the mean over each example's "
        "valid positions: divide by the number of valid positions, not by T, and give the mask a "
        f"trailing axis (mask[..., None]) so it lines up with the positions, not the features "
        f"({first_difference(got, want)})",
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)
@pytest.mark.parametrize("fill", [1e30, float("inf"), float("nan")], ids=str)
def test_masked_mean_ignores_any_padding(fill):
    x = torch.randn(3, 5, 6, generator=gen(2))
    mask = lengths_mask([5, 2, 3], 5)
    want = loop_masked_mean(x, mask)
    got = fs.masked_mean(padded_with(x, mask, fill), mask, dim=1)
    judge.close(
        got,
        want,
        f"masked_mean changed when only padded positions were set to {fill}: padding must not reach "
        "the sum at all — zero it with torch.where(mask, x, 0) before summing, or select the valid "
        "entries (x * mask is not enough: inf * 0 and nan * 0 are nan)",
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)
def test_masked_mean_gradient_skips_padding():
    x = torch.randn(3, 4, 3, generator=gen(3))
    mask = lengths_mask([4, 1, 2], 4)
    upstream = torch.randn(3, 3, generator=gen(4))
    with because("masked_mean(x[3, 4, 3], mask[3, 4], dim=1) could not be backpropagated"):
        _, grad = masked_mean_backward(padded_with(x, mask, float("inf")), mask, 1, upstream)
    counts = mask.sum(1).clamp(min=1).to(x.dtype)  # valid positions per example
    want = mask[..., None] * (upstream / counts[:, None])[:, None, :]  # d mean / d x
    assert grad is not None and judge.is_equal(grad[~mask], torch.zeros_like(grad[~mask])), (
        "the gradient reaching padded positions (here holding inf) must be exactly 0: "
        f"got {brief(grad[~mask]) if grad is not None else None}. torch.where(mask, x, 0) sends "
        "no gradient to the slots it replaces; x * mask sends inf * 0 = nan"
    )
    judge.close(
        grad,
        want,
        "each valid position of example b must receive upstream[b] / (number of valid positions of "
        f"b): {first_difference(grad, want)}",
        atol=1e-6,
        rtol=1e-5,
    )


def same_values(got, want, atol=1e-5):
    """Equal shapes and values, where an inf must meet the same inf and a nan a nan."""
    return judge.is_close(got, want, atol=atol, rtol=1e-5, equal_nan=True)


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")], ids=str)
def test_masked_mean_keeps_non_finite_valid_values(value):
    x = torch.randn(4, 4, 4, generator=gen(6))
    mask = lengths_mask([4, 2, 3, 1], 4)
    x = padded_with(x, mask, float("nan"))  # padding: ignored whatever it holds
    x[1, 0, 2] = value  # a valid position of example 1 (feature 2)
    x[3, 0, 0] = value  # the only valid position of example 3 (feature 0)
    want = loop_masked_mean(x, mask)  # (4, 4): want[1, 2] and want[3, 0] are not finite
    got = fs.masked_mean(x, mask, dim=1)
    assert tuple(got.shape) == (4, 4), (
        f"masked_mean(x[4, 4, 4], mask[4, 4], dim=1) returned shape {tuple(got.shape)}, "
        "expected (4, 4)"
    )
    assert same_values(got, want), (
        f"masked_mean(x[4, 4, 4], mask, dim=1) with {value} at a valid position (example 1, "
        f"feature 2) and nan in every padded slot returned {got[1, 2].item():.4g} there and "
        f"{got[3, 0].item():.4g} for example 3's only position (expected {want[1, 2].item()} "
        f"and {want[3, 0].item()}; {first_difference(got, want)}): only padding is "
        "ignored; a valid value counts as it is, so an inf or nan at a valid position must "
        "reach its mean — select with the mask alone, never clean x with nan_to_num, "
        "nansum/nanmean or an isfinite test"
    )


# ---- ch06a.2 sequence_scores (repair) ----------------------------------------------


def make_head(kind, E, seed):
    """A seeded per-position head: "linear" is nn.Linear(E, 1), "mlp" a small non-linear one."""
    if kind == "linear":
        head = nn.Linear(E, 1)
    else:
        head = nn.Sequential(nn.Linear(E, 4), nn.Tanh(), nn.Linear(4, 1))
    g = gen(seed)
    with torch.no_grad():
        for p in head.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 1.5 / p.shape[-1] ** 0.5)
    return head


@probe
def scores_with_head(x, mask, kind, seed):
    """sequence_scores(x, mask, head) with the seeded head ``make_head`` builds."""
    head = make_head(kind, x.shape[-1], seed)
    with torch.no_grad():
        return fs.sequence_scores(x, mask, head)


def loop_scores(x, mask, head):
    """The mean of each example's valid per-position scores, one position at a time."""
    out = []
    with torch.no_grad():
        for b in range(x.shape[0]):
            valid = [head(x[b, t]).reshape(()) for t in range(x.shape[1]) if mask[b, t]]
            out.append(torch.stack(valid).mean() if valid else torch.zeros(()))
    return torch.stack(out)


def scores_checked(x, mask, kind, seed):
    with because(
        f"sequence_scores(x{list(x.shape)}, mask{list(mask.shape)}, head) raised: the head "
        "returns (B, T, 1); drop the size-1 axis and pool the positions with the mask"
    ):
        return scores_with_head(x, mask, kind, seed)


@pytest.mark.task("ch06a.2")
@pytest.mark.points(3)
def test_sequence_scores_the_books_shapes():
    x = torch.randn(8, 128, 768, generator=gen(3))
    mask = lengths_mask([128, 100, 7, 64, 1, 128, 90, 33], 128)
    head = make_head("linear", 768, seed=5)
    with torch.no_grad():
        per_position = tuple(head(x).shape)
    assert per_position == (8, 128, 1), f"course bug: nn.Linear(768, 1) gave {per_position}"
    got = scores_checked(x, mask, "linear", seed=5)
    want = loop_scores(x, mask, head)
    assert tuple(got.shape) == (8,), (
        f"sequence_scores(x[8, 128, 768], mask[8, 128], nn.Linear(768, 1)) returned shape "
        f"{tuple(got.shape)}, expected (8,): the head gives (8, 128, 1), one score per "
        "(example, position); drop the size-1 axis and pool the positions"
    )
    judge.close(
        got,
        want,
        "sequence_scores differs from the mean of each example's valid per-position scores: "
        f"padded positions must not be averaged in (use the mask when pooling over positions); "
        f"{first_difference(got, want, atol=1e-4)}",
        atol=1e-4,
        rtol=1e-5,
    )


@pytest.mark.task("ch06a.2")
@pytest.mark.points(2)
def test_sequence_scores_default_head_and_padding():
    x = torch.randn(4, 4, 4, generator=gen(4))
    mask = lengths_mask([2, 4, 1, 3], 4)
    got = fs.sequence_scores(x, mask)
    want = loop_scores(x, mask, lambda v: v.mean())
    assert tuple(got.shape) == (4,), (
        f"sequence_scores(x[4, 4, 4], mask[4, 4]) returned shape {tuple(got.shape)}, expected "
        "(4,): one score per example"
    )
    judge.close(
        got,
        want,
        f"sequence_scores(x[4, 4, 4], mask) without a head returned "
        f"{[round(v, 4) for v in got.tolist()]}, expected {[round(v, 4) for v in want.tolist()]}: "
        "each position scores the mean of its features, then only valid positions are averaged",
        atol=1e-5,
        rtol=1e-5,
    )
    again = fs.sequence_scores(padded_with(x, mask, -1e6), mask)
    judge.close(
        again,
        got,
        "sequence_scores changed when only padded positions changed: padding must not count",
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.task("ch06a.2")
def test_sequence_scores_score_first_then_pool():
    x = torch.randn(4, 6, 6, generator=gen(22)) * 2
    mask = lengths_mask([6, 2, 5, 1], 6)
    got = scores_checked(x, mask, "mlp", seed=22)
    want = loop_scores(x, mask, make_head("mlp", 6, seed=22))
    assert tuple(got.shape) == (4,), (
        f"sequence_scores(x[4, 6, 6], mask[4, 6], an MLP head) returned shape "
        f"{tuple(got.shape)}, expected (4,): one score per example"
    )
    assert judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
        "with a head that is not linear, sequence_scores must score every position first and "
        "then average the valid positions' scores; averaging the features before the head is "
        f"only the same for a linear head ({first_difference(got, want)})"
    )


@pytest.mark.task("ch06a.2")
@pytest.mark.points(2)
def test_sequence_scores_keeps_non_finite_valid_scores():
    x = torch.randn(4, 5, 4, generator=gen(24))
    mask = lengths_mask([5, 3, 2, 4], 5)
    x[1, 1, 0] = float("nan")  # valid: example 1 scores nan
    x[2, 0, 3] = float("inf")  # valid: example 2 scores inf
    x[3, 4] = float("nan")  # padding of example 3: ignored
    x[0, 2, 1] = float("-inf")  # valid: example 0 scores -inf
    got = fs.sequence_scores(x, mask)
    want = loop_scores(x, mask, lambda v: v.mean())  # [-inf, nan, inf, finite]
    assert tuple(got.shape) == (4,), (
        f"sequence_scores(x[4, 5, 4], mask[4, 5]) returned shape {tuple(got.shape)}, expected "
        "(4,): one score per example"
    )
    assert same_values(got, want), (
        f"sequence_scores(x, mask) without a head returned {got.tolist()} when valid positions of "
        f"examples 0, 1 and 2 hold -inf, nan and inf and only padding of example 3 holds nan; "
        f"expected {want.tolist()}: a valid position's score counts as it is (an inf or nan "
        "there must reach its example's score) and only padding is ignored — pool with the "
        "mask, never clean the scores with nan_to_num, nanmean or an isfinite test"
    )


# ---- ch06a.3 hinge_loss ------------------------------------------------------------


@pytest.mark.task("ch06a.3")
@pytest.mark.points(2)
def test_hinge_loss_values():
    scores = torch.tensor([2.0, 0.5, -1.0, 0.0, -3.0])
    y = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0])
    want = torch.tensor([0.0, 0.5, 2.0, 1.0, 0.0])  # max(0, 1 - y * score)
    got = fs.hinge_loss(scores, y, reduction="none")
    judge.close(
        got,
        want,
        f"hinge_loss(scores={scores.tolist()}, y={y.tolist()}, reduction='none') returned "
        f"{got.tolist()}, expected {want.tolist()}: max(0, 1 - y * score) — a correct score "
        "inside the margin (y * score < 1) still costs something",
        atol=1e-8,
        rtol=1e-5,
    )
    mean, total = fs.hinge_loss(scores, y), fs.hinge_loss(scores, y, reduction="sum")
    judge.close(
        mean, torch.tensor(0.7), "hinge_loss(scores, y): the mean over examples", atol=0, rtol=1e-6
    )
    judge.close(
        total, torch.tensor(3.5), "hinge_loss(scores, y, 'sum'): the sum", atol=0, rtol=1e-6
    )


@pytest.mark.task("ch06a.3")
@pytest.mark.points(2)
def test_hinge_loss_refuses_a_silent_broadcast():
    scores = torch.randn(6, 1, generator=gen(30))  # what nn.Linear(E, 1) returns
    y = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    with pytest.raises(ValueError):
        fs.hinge_loss(scores, y)
        pytest.fail(
            "hinge_loss(scores[6, 1], y[6]) did not raise ValueError: (6, 1) against (6,) "
            "broadcasts to a (6, 6) table of every score against every label"
        )


# ---- ch06a.4 train_linear_svm ------------------------------------------------------


@pytest.mark.task("ch06a.4")
@pytest.mark.points(2)
def test_svm_separates_random_labels_in_high_dimension():
    X = torch.randn(40, 200, generator=gen(5))
    y = torch.where(torch.rand(40, generator=gen(6)) < 0.5, -1.0, 1.0)  # labels by coin flip
    w, b = fs.train_linear_svm(X, y, C=1.0)
    assert tuple(w.shape) == (200,) and isinstance(b, float), (
        f"train_linear_svm should return (w of shape (200,), b a float), got w of shape "
        f"{tuple(w.shape)} and b = {brief(b)}"
    )
    acc = float(((X @ w.float() + b).sign() == y).float().mean())
    assert acc == 1.0, (
        f"train_linear_svm on 40 points in 200 dimensions with random labels reached training "
        f"accuracy {acc:.2f}; in 200 dimensions any labelling of 40 points is linearly separable, "
        "so a working SVM fits all of them: check the sign of the hinge's gradient and the steps"
    )


@pytest.mark.task("ch06a.4")
@pytest.mark.points(2)
def test_svm_finds_the_widest_margin():
    D = 30
    X = torch.zeros(6, D)
    X[0, 0], X[1, 0] = 2.0, -2.0  # the two support vectors, margin 2 on each side
    X[2, :2] = torch.tensor([5.0, 3.0])  # easy points further out, pulling in other directions
    X[3, :3] = torch.tensor([-4.0, 0.0, -1.0])
    X[4, :4] = torch.tensor([3.0, 0.0, 0.0, 2.0])
    X[5, 0] = -6.0
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    w, b = fs.train_linear_svm(X, y, C=1.0)
    off = float(w[1:].abs().max())
    assert abs(float(w[0]) - 0.5) < 0.1 and off < 0.1 and abs(float(b)) < 0.1, (
        f"train_linear_svm on points separated along axis 0 by the gap (-2, 2) gave "
        f"w[0]={float(w[0]):.3f}, max |w[1:]|={off:.3f}, b={float(b):.3f}; the maximum-margin "
        "plane is w = (0.5, 0, ...), b = 0 — minimize 0.5*||w||^2 + C * sum of hinge losses, "
        "with a step size that shrinks toward 0 (a constant step keeps jumping across the kink)"
    )


# ---- ch06a.5 distance_concentration ------------------------------------------------


@probe
def contrasts(dims, n, seed, global_seed=0):
    """distance_concentration(dims, n, generator) with a fresh generator seeded ``seed``
    (None: no generator), after seeding the global RNG with ``global_seed``."""
    torch.manual_seed(global_seed)
    g = None if seed is None else torch.Generator().manual_seed(seed)
    return fs.distance_concentration(dims, n, g)


@pytest.mark.task("ch06a.5")
@pytest.mark.points(2)
def test_relative_contrast_shrinks_with_dimension():
    dims = [2, 10, 100, 1000]
    got = contrasts(dims, 100, seed=7)
    assert len(got) == 4 and all(isinstance(v, float) for v in got), (
        f"distance_concentration(dims={dims}, n=100) should return 4 floats, got {brief(got)}"
    )
    assert all(0 < v < float("inf") for v in got), (
        f"relative contrasts {got} should be finite and positive: leave out each point's "
        "distance to itself (0), or min is 0"
    )
    assert got[0] > got[1] > got[2] > got[3], (
        f"relative contrasts {[round(v, 3) for v in got]} for d = {dims} do not shrink as d grows"
    )
    assert got[0] > 5 and got[3] < 0.5, (
        f"relative contrast (max - min) / min was {got[0]:.3g} in 2-D and {got[3]:.3g} in 1000-D; "
        "in 2-D some pair is nearly touching (contrast in the hundreds), in 1000-D every pair is "
        "about equally far apart (contrast well below 1)"
    )


@pytest.mark.task("ch06a.5")
@pytest.mark.points(2)
def test_distance_concentration_follows_its_generator():
    a = contrasts([3, 300], 40, seed=51, global_seed=0)
    b = contrasts([3, 300], 40, seed=51, global_seed=999)  # the global RNG must not matter
    c = contrasts([3, 300], 40, seed=52, global_seed=0)
    assert a == b, (
        f"the same generator seed gave {a} and then {b} (only the global seed changed): draw "
        "the points with torch.rand(..., generator=generator)"
    )
    assert a != c, "different generator seeds gave identical contrasts: draw from generator"
