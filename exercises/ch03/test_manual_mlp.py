"""Public tests for ch03 — run with `pytest exercises/ch03` (add `--impl solutions` to
see the reference pass)."""

import math

import pytest
import torch
import torch.nn.functional as F

from harness.target import chapter_module

mm = chapter_module("ch03", "manual_mlp")


def book_data():
    """The book's data, built here from the recipe: seed 0, randn(2000, 2), randperm 80/20."""
    torch.manual_seed(0)
    X = torch.randn(2000, 2)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    perm = torch.randperm(2000)
    return X[perm[:1600]], y[perm[:1600]], X[perm[1600:]], y[perm[1600:]]


def book_params():
    """The book's parameters: seed 1, W1 = randn(2,16)/sqrt(2), W2 = randn(16,2)/4, zero biases."""
    torch.manual_seed(1)
    W1 = torch.randn(2, 16) / math.sqrt(2)
    W2 = torch.randn(16, 2) / 4
    params = {"W1": W1, "b1": torch.zeros(16), "W2": W2, "b2": torch.zeros(2)}
    return {k: v.requires_grad_() for k, v in params.items()}


def relu_mlp(params, X):
    return torch.relu(X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]


def linear_mlp(params, X):
    """The chapter's broken network: two layers, no nonlinearity between them."""
    return (X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]


# ---------------------------------------------------------------- ch03.1 data


@pytest.mark.task("ch03.1")
def test_xor_data_shapes_labels_and_split():
    d = mm.make_xor_data(500, 3)
    shapes = [tuple(t.shape) for t in d]
    assert shapes == [(400, 2), (400,), (100, 2), (100,)], (
        f"make_xor_data(500, 3) returned shapes {shapes}; expected 80% train (400, 2), (400,) "
        "and 20% validation (100, 2), (100,)"
    )
    assert d.X_train.dtype == torch.float32 and d.y_train.dtype == torch.int64, (
        f"got X {d.X_train.dtype}, y {d.y_train.dtype}: features are float32, labels int64 class indices"
    )
    for X, y, part in ((d.X_train, d.y_train, "train"), (d.X_val, d.y_val, "val")):
        rule = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
        assert torch.equal(y, rule), (
            f"{part} labels disagree with (x0 > 0) xor (x1 > 0) on {int((y != rule).sum())} rows: "
            "label each point after drawing it, and split X and y with the same indices"
        )
    rows = torch.cat([d.X_train, d.X_val])
    assert torch.unique(rows, dim=0).shape[0] == 500, (
        "train and validation together should be the 500 drawn points, each exactly once: "
        "split by a permutation, not by drawing indices with replacement"
    )


@pytest.mark.task("ch03.1")
@pytest.mark.points(2)
def test_xor_data_is_the_books_data():
    d = mm.make_xor_data(2000, 0)
    Xtr, ytr, Xva, yva = book_data()
    assert torch.equal(d.X_train, Xtr) and torch.equal(d.X_val, Xva), (
        "make_xor_data(2000, 0) is not the book's data: from a generator seeded with 0 draw "
        "randn(n, 2) first, then randperm(n); the first 80% of the permutation is the training set"
    )
    assert torch.equal(d.y_train, ytr) and torch.equal(d.y_val, yva), (
        "the points match the book's but the labels do not"
    )


# ---------------------------------------------------------------- ch03.2 init


@pytest.mark.task("ch03.2")
def test_init_gives_leaf_tensors_that_require_grad():
    params = mm.init_mlp(3, 5, 4, torch.Generator().manual_seed(0))
    shapes = {k: tuple(v.shape) for k, v in params.items()}
    assert shapes == {"W1": (3, 5), "b1": (5,), "W2": (5, 4), "b2": (4,)}, (
        f"init_mlp(3, 5, 4, g) returned {shapes}; X @ W1 needs W1 of shape (d_in, hidden) "
        "and W2 of shape (hidden, n_classes)"
    )
    for name, t in params.items():
        assert t.requires_grad, f"params[{name!r}] does not require grad: backward will skip it"
        assert t.is_leaf, (
            f"params[{name!r}] is not a leaf (grad_fn={type(t.grad_fn).__name__}): it was computed "
            "from a tensor that required grad, e.g. randn(..., requires_grad=True) / sqrt(fan_in); "
            "backward never fills a non-leaf's .grad. Scale first, then call requires_grad_()"
        )


@pytest.mark.task("ch03.2")
def test_init_scales_by_fan_in():
    params = mm.init_mlp(400, 100, 25, torch.Generator().manual_seed(0))
    for name, fan_in in (("W1", 400), ("W2", 100)):
        std = params[name].detach().std().item()
        assert std == pytest.approx(1 / math.sqrt(fan_in), rel=0.1), (
            f"init_mlp(400, 100, 25, g): {name} has std {std:.4f}, expected about "
            f"1/sqrt({fan_in}) = {1 / math.sqrt(fan_in):.4f}: scale standard normals by "
            "1/sqrt(fan_in), the number of inputs each output sums over"
        )
    for name in ("b1", "b2"):
        assert torch.all(params[name] == 0), f"{name} should start at zero"


@pytest.mark.task("ch03.2")
def test_init_draws_from_the_given_generator():
    torch.manual_seed(123)
    a = mm.init_mlp(2, 16, 2, torch.Generator().manual_seed(1))
    torch.manual_seed(456)
    b = mm.init_mlp(2, 16, 2, torch.Generator().manual_seed(1))
    book = book_params()
    for name in ("W1", "W2"):
        assert torch.equal(a[name], b[name]), (
            f"two calls with generators seeded alike gave different {name}: draw with "
            "randn(..., generator=generator), not from the global random state"
        )
        assert torch.allclose(a[name], book[name]), (
            f"init_mlp(2, 16, 2, Generator().manual_seed(1))[{name!r}] is not the book's: draw W1 "
            "then W2 as randn(fan_in, fan_out, generator=generator) / sqrt(fan_in)"
        )


# ---------------------------------------------------------------- ch03.3 forward


@pytest.mark.task("ch03.3")
@pytest.mark.points(2)
def test_forward_is_a_relu_mlp():
    g = torch.Generator().manual_seed(5)
    # d_in == hidden == n_classes: a transposed weight would still run, so values decide
    params = {
        "W1": torch.randn(6, 6, generator=g),
        "b1": torch.randn(6, generator=g),
        "W2": torch.randn(6, 6, generator=g),
        "b2": torch.randn(6, generator=g),
    }
    X = torch.randn(10, 6, generator=g)
    got = mm.mlp_forward(params, X)
    want = relu_mlp(params, X)
    assert got.shape == want.shape, (
        f"mlp_forward returned shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    )
    err = (got - want).abs().max().item()
    assert err < 1e-4, (
        f"mlp_forward differs from relu(X @ W1 + b1) @ W2 + b2 by up to {err:.3g}"
        + (
            ": it equals the same layers with no nonlinearity — two linear layers compose to "
            "one linear map, so the hidden layer adds nothing; put a ReLU between them"
            if torch.allclose(got, linear_mlp(params, X), atol=1e-4)
            else ": check the order of the matrix products and where the biases are added"
        )
    )


# ---------------------------------------------------------------- ch03.4 loss


@pytest.mark.task("ch03.4")
def test_cross_entropy_matches_pytorch():
    g = torch.Generator().manual_seed(2)
    logits = 3 * torch.randn(6, 6, generator=g)  # N == C: a softmax over the wrong axis runs
    targets = torch.randint(0, 6, (6,), generator=g)
    got = mm.cross_entropy(logits, targets)
    want = F.cross_entropy(logits, targets)
    assert got.dim() == 0, f"cross_entropy returned shape {tuple(got.shape)}, expected a 0-d mean"
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), (
        f"cross_entropy(logits (6, 6), targets) = {got.item():.5f}, F.cross_entropy gives "
        f"{want.item():.5f}: normalise each row over the class axis (dim=1), pick the target's "
        "log-probability, negate, and average over the batch"
    )


@pytest.mark.task("ch03.4")
@pytest.mark.points(2)
def test_cross_entropy_is_stable_at_large_logits():
    logits = torch.tensor([[1000.0, -1000.0], [-1000.0, 1000.0], [1000.0, 1000.0], [0.0, 999.0]])
    targets = torch.tensor([0, 0, 1, 0])
    got = mm.cross_entropy(logits, targets)
    want = F.cross_entropy(logits, targets)
    assert torch.isfinite(got), (
        f"cross_entropy on logits of +-1000 returned {got.item()}: exp(1000) overflows float32 "
        "to inf, and a probability that underflows to 0 gives log(0) = -inf; subtract each "
        "row's max before exp and stay in log space (log-sum-exp) to keep it stable"
    )
    assert torch.allclose(got, want, rtol=1e-5), (
        f"cross_entropy on logits of +-1000 returned {got.item():.3f}, F.cross_entropy {want.item():.3f}: "
        "the shift by the row max must be undone, log(sum(exp(z - m))) + m"
    )


@pytest.mark.task("ch03.4")
def test_cross_entropy_gradient_matches_pytorch():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(5, 3, generator=g).requires_grad_()
    targets = torch.tensor([0, 2, 1, 1, 0])
    mm.cross_entropy(logits, targets).backward()
    got = logits.grad.clone() if logits.grad is not None else None
    logits.grad = None
    F.cross_entropy(logits, targets).backward()
    assert got is not None, (
        "after cross_entropy(logits, targets).backward() logits.grad is None: the loss must be "
        "built from tensor operations on logits, not from .item() or numpy values"
    )
    assert torch.allclose(got, logits.grad, atol=1e-6), (
        "the gradient of cross_entropy w.r.t. the logits differs from F.cross_entropy's "
        "(softmax - one_hot) / N"
    )


# ---------------------------------------------------------------- ch03.5 update


@pytest.mark.task("ch03.5")
@pytest.mark.points(2)
def test_sgd_step_updates_the_same_leaf_tensors_in_place():
    g = torch.Generator().manual_seed(4)
    params = {
        "W": torch.randn(3, 3, generator=g).requires_grad_(),
        "b": torch.zeros(3).requires_grad_(),
    }
    grads = {"W": torch.randn(3, 3, generator=g), "b": torch.tensor([1.0, -2.0, 0.5])}
    for k in params:
        params[k].grad = grads[k].clone()
    before = {k: v.detach().clone() for k, v in params.items()}
    ids = {k: id(v) for k, v in params.items()}
    mm.sgd_step(params, 0.1)
    for k, p in params.items():
        assert id(p) == ids[k], (
            f"sgd_step replaced params[{k!r}] by a new tensor: update the existing one in place "
            "(p -= lr * p.grad under torch.no_grad()), or the next backward fills a tensor "
            "nobody updates"
        )
        assert p.is_leaf and p.requires_grad, (
            f"after sgd_step params[{k!r}] is_leaf={p.is_leaf}, requires_grad={p.requires_grad}: "
            "the update must not be recorded in the graph; do it under torch.no_grad()"
        )
        assert torch.allclose(p.detach(), before[k] - 0.1 * grads[k], atol=1e-6), (
            f"sgd_step(params, lr=0.1) moved params[{k!r}] wrongly: expected p - lr * p.grad "
            "(against the gradient)"
        )
        assert p.grad is not None and torch.equal(p.grad, grads[k]), (
            f"sgd_step changed params[{k!r}].grad; leave it for step_report to read — the "
            "training loop clears it before the next backward"
        )


# ---------------------------------------------------------------- ch03.6 report


@pytest.mark.task("ch03.6")
@pytest.mark.points(2)
def test_step_report_on_a_hand_made_step():
    a = torch.zeros(2, 2).requires_grad_()
    unused = torch.ones(3).requires_grad_()
    bad = torch.zeros(2).requires_grad_()
    params = {"a": a, "unused": unused, "bad": bad}
    before = {k: v.detach().clone() for k, v in params.items()}
    a.grad = torch.tensor([[3.0, 0.0], [0.0, 4.0]])
    bad.grad = torch.tensor([float("nan"), 1.0])
    with torch.no_grad():
        a += torch.tensor([[0.1, -0.1], [0.1, -0.3]])  # largest single move 0.3, norm ~0.35
    rows = mm.step_report(before, params)
    assert [r.name for r in rows] == ["a", "unused", "bad"], (
        f"step_report rows are named {[r.name for r in rows]}; expected one row per entry of params, in order"
    )
    ra, ru, rb = rows
    assert ra.is_leaf and not ra.grad_is_none and ra.finite, (
        f"row for a healthy leaf with a gradient: {ra}"
    )
    assert ra.grad_norm == pytest.approx(5.0, rel=1e-5), (
        f"a.grad is [[3, 0], [0, 4]] but grad_norm = {ra.grad_norm}: the L2 norm is 5"
    )
    assert ra.moved == pytest.approx(0.3, abs=1e-6), (
        f"a moved by [[0.1, -0.1], [0.1, -0.3]] but moved = {ra.moved:.4f}: moved is the largest "
        "absolute change of any single entry (0.3), not a norm or a mean of the change"
    )
    assert ru.grad_is_none and ru.grad_norm == 0.0 and ru.moved == 0.0, (
        f"a tensor the loss never reached has .grad None, grad_norm 0.0 and did not move; got {ru}"
    )
    assert not rb.finite, f"a tensor whose gradient holds nan must report finite=False; got {rb}"


@pytest.mark.task("ch03.6")
@pytest.mark.points(3)
def test_step_report_reproduces_the_books_first_step_table():
    """The chapter's broken (linear) network, one full-batch step at lr 0.5."""
    Xtr, ytr, _, _ = book_data()
    params = book_params()
    F.cross_entropy(linear_mlp(params, Xtr), ytr).backward()
    before = {k: v.detach().clone() for k, v in params.items()}
    with torch.no_grad():
        for p in params.values():
            p -= 0.5 * p.grad
    rows = {r.name: r for r in mm.step_report(before, params)}
    book = {
        "W1": (0.4516, 0.1048),
        "b1": (0.0192, 0.0053),
        "W2": (1.1058, 0.1918),
        "b2": (0.0175, 0.0062),
    }
    for name, (norm, moved) in book.items():
        r = rows[name]
        assert r.is_leaf and not r.grad_is_none and r.finite, f"row {name}: {r}"
        assert r.grad_norm == pytest.approx(norm, abs=1e-4), (
            f"{name}: grad_norm {r.grad_norm:.4f}, the book's table says {norm}: the L2 norm of .grad"
        )
        assert r.moved == pytest.approx(moved, abs=1e-4), (
            f"{name}: moved {r.moved:.4f}, the book's table says {moved}: the largest absolute "
            "change of any single entry"
        )


# ---------------------------------------------------------------- ch03.7 training


@pytest.mark.task("ch03.7")
@pytest.mark.points(3)
def test_the_nonlinearity_is_what_learns_xor():
    Xtr, ytr, Xva, yva = book_data()
    data = mm.XorData(Xtr, ytr, Xva, yva)
    hist = mm.train_mlp(data, hidden=16, lr=0.5, steps=500, seed=1)
    assert len(hist.train_loss) == len(hist.val_acc) == 500, (
        f"train_mlp(steps=500) recorded {len(hist.train_loss)} losses and {len(hist.val_acc)} "
        "accuracies; expected one of each per step"
    )
    acc = hist.val_acc[-1]
    assert acc >= 0.9, (
        f"train_mlp reached validation accuracy {acc:.4f} on XOR (the book: 0.995); a plateau "
        "near 0.59 means the hidden layer has no nonlinearity"
    )
    scored = (relu_mlp(hist.params, Xva).argmax(1) == yva).float().mean().item()
    assert scored == pytest.approx(acc, abs=1e-6), (
        f"the returned params score {scored:.4f} on the validation set but val_acc[-1] says "
        f"{acc:.4f}: the last entry describes the model after the last update"
    )
    assert acc == pytest.approx(0.995, abs=1e-4), (
        f"validation accuracy {acc:.4f}, the book's recipe gives 0.995: full batch, lr 0.5, "
        "parameters from init_mlp with Generator().manual_seed(seed)"
    )
    linear = mm.train_mlp(data, hidden=16, lr=0.5, steps=500, seed=1, forward=linear_mlp)
    assert linear.val_acc[-1] < 0.7, (
        f"with the nonlinearity removed train_mlp still reached {linear.val_acc[-1]:.4f}; "
        "a linear model cannot separate XOR quadrants (the book: 0.5925) — use the given forward"
    )
    assert linear.val_acc[-1] == pytest.approx(0.5925, abs=1e-4), (
        f"without the nonlinearity: {linear.val_acc[-1]:.4f}, the book says 0.5925"
    )
