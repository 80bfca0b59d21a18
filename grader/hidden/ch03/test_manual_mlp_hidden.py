"""Hidden tests for ch03: other sizes, seeds and edge cases than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test.

PYTEST_DONT_REWRITE: a failure shows only the message, never the assertion's source."""

import math

import pytest
import torch
import torch.nn.functional as F

from harness.target import chapter_module

mm = chapter_module("ch03", "manual_mlp")


def relu_mlp(params, X):
    return torch.relu(X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]


def linear_mlp(params, X):
    return (X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]


def recipe_params(d_in, hidden, n_classes, seed):
    g = torch.Generator().manual_seed(seed)
    W1 = torch.randn(d_in, hidden, generator=g) / math.sqrt(d_in)
    W2 = torch.randn(hidden, n_classes, generator=g) / math.sqrt(hidden)
    params = {"W1": W1, "b1": torch.zeros(hidden), "W2": W2, "b2": torch.zeros(n_classes)}
    return {k: v.requires_grad_() for k, v in params.items()}


def recipe_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 2, generator=g)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    perm = torch.randperm(n, generator=g)
    k = int(0.8 * n)
    return X[perm[:k]], y[perm[:k]], X[perm[k:]], y[perm[k:]]


# ---------------------------------------------------------------- ch03.1


@pytest.mark.task("ch03.1")
def test_data_for_odd_sizes_and_other_seeds():
    d = mm.make_xor_data(1001, 17)
    assert d.X_train.shape == (800, 2) and d.X_val.shape == (201, 2), (
        "the training set is the first int(0.8 * n) permuted points, the rest is validation"
    )
    want = recipe_data(1001, 17)
    assert all(torch.equal(a, b) for a, b in zip(d, want)), (
        "the data must follow the documented recipe for every n and seed: randn(n, 2) then "
        "randperm(n) from one generator seeded with seed"
    )


@pytest.mark.task("ch03.1")
def test_data_depends_on_the_seed_only():
    torch.manual_seed(1)
    a = mm.make_xor_data(300, 4)
    torch.manual_seed(2)
    b = mm.make_xor_data(300, 4)
    c = mm.make_xor_data(300, 5)
    assert all(torch.equal(x, y) for x, y in zip(a, b)), (
        "the same seed must give the same data whatever the global random state"
    )
    assert not torch.equal(a.X_train, c.X_train), "different seeds must give different data"
    for part in (a.y_train, a.y_val):
        assert set(part.tolist()) == {0, 1}, "both classes must appear in each split"


# ---------------------------------------------------------------- ch03.2


@pytest.mark.task("ch03.2")
def test_init_other_sizes_follow_the_recipe():
    got = mm.init_mlp(7, 3, 5, torch.Generator().manual_seed(9))
    want = recipe_params(7, 3, 5, 9)
    for k in want:
        assert got[k].shape == want[k].shape, (
            f"{k} has the wrong shape for X @ W1 -> (N, hidden), h @ W2 -> (N, n_classes)"
        )
        assert torch.allclose(got[k].detach(), want[k].detach(), atol=1e-6), (
            f"{k} is not randn(fan_in, fan_out, generator) / sqrt(fan_in) drawn W1 then W2 "
            "(biases zero)"
        )
        assert got[k].is_leaf and got[k].requires_grad, (
            f"{k} must be a leaf tensor that requires grad"
        )


@pytest.mark.task("ch03.2")
def test_init_advances_the_generator():
    g = torch.Generator().manual_seed(3)
    a = mm.init_mlp(4, 4, 4, g)
    b = mm.init_mlp(4, 4, 4, g)
    assert not torch.equal(a["W1"], b["W1"]), (
        "two calls sharing one generator must draw different weights: the generator must be "
        "used (and advanced), not re-seeded or ignored"
    )


@pytest.mark.task("ch03.2")
def test_init_gradients_reach_every_tensor():
    params = mm.init_mlp(3, 8, 3, torch.Generator().manual_seed(0))
    X = torch.randn(16, 3)
    F.cross_entropy(relu_mlp(params, X), torch.randint(0, 3, (16,))).backward()
    for k, p in params.items():
        assert p.grad is not None, (
            f"after backward {k}.grad is None: every returned tensor must be a leaf that requires grad"
        )


# ---------------------------------------------------------------- ch03.3


@pytest.mark.task("ch03.3")
def test_forward_is_not_an_affine_map():
    g = torch.Generator().manual_seed(11)
    params = {
        "W1": torch.randn(4, 4, generator=g),
        "b1": torch.zeros(4),
        "W2": torch.randn(4, 4, generator=g),
        "b2": torch.zeros(4),
    }
    X = torch.randn(8, 4, generator=g)
    zero = torch.zeros(1, 4)
    gap = (
        (mm.mlp_forward(params, X) + mm.mlp_forward(params, -X) - 2 * mm.mlp_forward(params, zero))
        .abs()
        .max()
        .item()
    )
    assert gap > 1e-2, (
        "mlp_forward satisfies f(x) + f(-x) = 2 f(0) like an affine map: without a nonlinearity "
        "between the layers the network is linear and cannot fit XOR"
    )


@pytest.mark.task("ch03.3")
def test_forward_other_shapes_and_dtypes():
    g = torch.Generator().manual_seed(12)
    params = {
        "W1": torch.randn(3, 7, generator=g, dtype=torch.float64),
        "b1": torch.randn(7, generator=g, dtype=torch.float64),
        "W2": torch.randn(7, 2, generator=g, dtype=torch.float64),
        "b2": torch.randn(2, generator=g, dtype=torch.float64),
    }
    X = torch.randn(1, 3, generator=g, dtype=torch.float64)
    got = mm.mlp_forward(params, X)
    assert got.dtype == torch.float64 and got.shape == (1, 2), (
        "mlp_forward must return (N, n_classes) logits in the dtype of its inputs"
    )
    assert torch.allclose(got, relu_mlp(params, X)), (
        "mlp_forward must compute relu(X @ W1 + b1) @ W2 + b2"
    )


# ---------------------------------------------------------------- ch03.4


@pytest.mark.task("ch03.4")
@pytest.mark.points(2)
def test_cross_entropy_extreme_and_mixed_logits():
    g = torch.Generator().manual_seed(21)
    logits = torch.randn(64, 3, generator=g) * 1e4
    logits[::4] = 0.0
    targets = torch.randint(0, 3, (64,), generator=g)
    got = mm.cross_entropy(logits, targets)
    want = F.cross_entropy(logits, targets)
    assert torch.isfinite(got) and torch.allclose(got, want, rtol=1e-4), (
        "cross_entropy must stay finite and equal to F.cross_entropy for logits of size 1e4 "
        "(exp overflows unless each row is shifted by its max)"
    )
    logits.requires_grad_()
    mm.cross_entropy(logits, targets).backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all(), (
        "the gradient of a stable cross-entropy must be finite even for huge logits"
    )


@pytest.mark.task("ch03.4")
def test_cross_entropy_many_classes_float64():
    g = torch.Generator().manual_seed(22)
    logits = torch.randn(5, 40, generator=g, dtype=torch.float64)
    targets = torch.tensor([39, 0, 7, 7, 21])
    got = mm.cross_entropy(logits, targets)
    assert got.dtype == torch.float64, "the loss must keep the logits' dtype"
    assert torch.allclose(got, F.cross_entropy(logits, targets), rtol=1e-10), (
        "cross_entropy must equal the batch mean of -log softmax(logits)[i, target_i] over the class axis"
    )


@pytest.mark.task("ch03.4")
def test_cross_entropy_single_example():
    logits = torch.tensor([[2.0, 1.0, 0.0]])
    got = mm.cross_entropy(logits, torch.tensor([2]))
    want = math.log(math.exp(2) + math.exp(1) + 1) - 0.0
    assert got.item() == pytest.approx(want, rel=1e-5), (
        "for one example the loss is log(sum_j exp(z_j)) - z_target"
    )


# ---------------------------------------------------------------- ch03.5


@pytest.mark.task("ch03.5")
@pytest.mark.points(2)
def test_sgd_step_skips_missing_grads_and_trains_repeatedly():
    params = recipe_params(2, 4, 2, 0)
    X = torch.randn(32, 2)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    unused = torch.ones(3, requires_grad=True)
    params["unused"] = unused
    losses = []
    for _ in range(5):
        for p in params.values():
            p.grad = None
        loss = F.cross_entropy(relu_mlp(params, X), y)
        loss.backward()
        mm.sgd_step(params, 0.1)
        losses.append(loss.item())
    assert torch.equal(params["unused"], torch.ones(3)) and params["unused"] is unused, (
        "a tensor whose grad is None must be left untouched by the update"
    )
    assert all(p.is_leaf for p in params.values()), (
        "the update must keep every tensor a leaf (no graph recorded through the update)"
    )
    assert losses[-1] < losses[0], "five small steps against the gradient must lower the loss"


@pytest.mark.task("ch03.5")
@pytest.mark.points(2)
def test_the_students_chain_reproduces_the_books_first_step():
    torch.manual_seed(0)
    X = torch.randn(2000, 2)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    tr = torch.randperm(2000)[:1600]
    params = mm.init_mlp(2, 16, 2, torch.Generator().manual_seed(1))
    before = {k: v.detach().clone() for k, v in params.items()}
    mm.cross_entropy(linear_mlp(params, X[tr]), y[tr]).backward()
    mm.sgd_step(params, 0.5)
    book = {"W1": 0.1048, "b1": 0.0053, "W2": 0.1918, "b2": 0.0062}
    for k, moved in book.items():
        got = (params[k].detach() - before[k]).abs().max().item()
        assert got == pytest.approx(moved, abs=1e-4), (
            "one step of init_mlp + cross_entropy + sgd_step at lr 0.5 must move each tensor "
            "by the book's table (largest single-entry change)"
        )


# ---------------------------------------------------------------- ch03.6


@pytest.mark.task("ch03.6")
@pytest.mark.points(2)
def test_step_report_flags_non_leaves_and_overflow():
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    nonleaf = leaf * 3
    big = torch.tensor([1.0, 1.0], requires_grad=True)
    params = {"big": big, "nonleaf": nonleaf, "leaf": leaf}
    before = {k: v.detach().clone() for k, v in params.items()}
    (nonleaf.sum() + big.sum()).backward()
    with torch.no_grad():
        big[0] = float("inf")
        leaf -= torch.tensor([0.5, -2.5])
    rows = {r.name: r for r in mm.step_report(before, params)}
    assert list(rows) == ["big", "nonleaf", "leaf"], "one row per tensor, in the order of params"
    assert not rows["nonleaf"].is_leaf and rows["nonleaf"].grad_is_none, (
        "a non-leaf tensor must be reported is_leaf=False with no gradient: backward never fills it"
    )
    assert not rows["big"].finite, "a tensor holding inf must be reported finite=False"
    assert rows["leaf"].finite and rows["leaf"].grad_norm == pytest.approx(3 * math.sqrt(2)), (
        "grad_norm must be the L2 norm of the tensor's .grad"
    )
    assert rows["leaf"].moved == pytest.approx(2.5), (
        "moved must be the largest absolute change of any single entry"
    )


@pytest.mark.task("ch03.6")
def test_step_report_on_a_frozen_step():
    params = recipe_params(3, 3, 3, 4)
    before = {k: v.detach().clone() for k, v in params.items()}
    F.cross_entropy(relu_mlp(params, torch.randn(9, 3)), torch.arange(9) % 3).backward()
    rows = mm.step_report(before, params)
    assert all(r.moved == 0.0 for r in rows), "no update happened, so nothing moved"
    assert rows[0].finite and not rows[0].grad_is_none and rows[0].grad_norm > 0, (
        "a healthy tensor with a gradient must report it"
    )
    assert all(isinstance(r.grad_norm, float) and isinstance(r.moved, float) for r in rows), (
        "grad_norm and moved must be Python floats"
    )


# ---------------------------------------------------------------- ch03.7


@pytest.mark.task("ch03.7")
@pytest.mark.points(2)
def test_training_history_follows_gradient_descent():
    Xtr, ytr, Xva, yva = recipe_data(600, 8)
    hist = mm.train_mlp(mm.XorData(Xtr, ytr, Xva, yva), hidden=8, lr=0.3, steps=15, seed=6)
    params = recipe_params(2, 8, 2, 6)
    losses, accs = [], []
    for _ in range(15):
        for p in params.values():
            p.grad = None
        loss = F.cross_entropy(relu_mlp(params, Xtr), ytr)
        loss.backward()
        with torch.no_grad():
            for p in params.values():
                p -= 0.3 * p.grad
        losses.append(loss.item())
        accs.append((relu_mlp(params, Xva).argmax(1) == yva).float().mean().item())
    assert hist.train_loss == pytest.approx(losses, rel=1e-4, abs=1e-6), (
        "the recorded losses differ from full-batch gradient descent from init_mlp's parameters: "
        "the gradients must be cleared before every backward (backward adds into .grad), and "
        "train_loss[k] is the loss computed in step k"
    )
    assert hist.val_acc == pytest.approx(accs, abs=1e-6), (
        "val_acc[k] must be the validation accuracy after update k"
    )


@pytest.mark.task("ch03.7")
@pytest.mark.points(2)
def test_training_learns_xor_from_other_data_and_seeds():
    d = mm.make_xor_data(1000, 5)
    hist = mm.train_mlp(d, hidden=32, lr=0.5, steps=300, seed=3)
    assert hist.val_acc[-1] >= 0.9, (
        f"an MLP with a ReLU hidden layer should reach >= 0.9 validation accuracy on XOR; got {hist.val_acc[-1]:.3f}"
    )
    lin = mm.train_mlp(d, hidden=32, lr=0.5, steps=300, seed=3, forward=linear_mlp)
    assert lin.val_acc[-1] < 0.7, "training must use the forward it is given"
