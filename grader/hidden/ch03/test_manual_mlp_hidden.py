"""Hidden tests for ch03: other sizes, seeds and edge cases than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test.

PYTEST_DONT_REWRITE: a failure shows only the message, never the assertion's source."""

import math
import random
import warnings

import pytest
import torch
import torch.nn.functional as F

from exercises.ch03.test_manual_mlp import (  # helpers shared with the public twin
    gd_run,
    history_problem,
    initialised,
    linear_mlp,
    loss_and_gradient,
    loss_without_library_losses,
    relu_mlp,
    trained,
)
from harness import backward, devices, judge
from harness.probe import because, probe
from harness.target import chapter_module, reference_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief, first_difference
    from harness.generated import example, examples, given, st
except ImportError:  # (probes never use them)
    pass

mm = chapter_module("ch03", "manual_mlp")
ref = reference_module("ch03", "manual_mlp")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "apply_random_step inputs_as_logits linear_mlp random_step recipe_params relu_mlp"
)


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


def same_split(got, want) -> bool:
    return len(list(got)) == 4 and all(
        isinstance(a, torch.Tensor) and a.dtype == b.dtype and judge.is_equal(a, b)
        for a, b in zip(got, want)
    )


# ---------------------------------------------------------------- ch03.1


@pytest.mark.task("ch03.1")
def test_data_for_odd_sizes_and_other_seeds():
    """The split keeps the first int(0.8 * n) permuted points for training, for any n and seed."""
    d = mm.make_xor_data(1001, 17)
    sizes = (tuple(d.X_train.shape), tuple(d.X_val.shape))
    assert sizes == ((800, 2), (201, 2)), (
        f"make_xor_data(1001, 17) split {sizes}: the training set is the first int(0.8 * n) "
        "permuted points (800, rounded down), the rest is validation"
    )
    assert same_split(d, recipe_data(1001, 17)), (
        "the data must follow the documented recipe for every n and seed: randn(n, 2) then "
        "randperm(n) from one generator seeded with seed"
    )


@probe
def data_under_global_seed(n, seed, global_seed):
    """make_xor_data(n, seed) after torch.manual_seed(global_seed), and the global
    generator's next draws after the call beside those it gives without the call."""
    torch.manual_seed(global_seed)
    untouched = torch.rand(4)
    torch.manual_seed(global_seed)
    d = mm.make_xor_data(n, seed)
    return {"data": [t.clone() for t in d], "next_draws": torch.rand(4), "untouched": untouched}


@pytest.mark.task("ch03.1")
def test_data_depends_on_the_seed_only():
    """The same seed gives the same data whatever the global random state; another seed other data."""
    with because("make_xor_data(300, seed) raised"):
        a = data_under_global_seed(300, 4, 1)["data"]
        b = data_under_global_seed(300, 4, 2)["data"]
        c = data_under_global_seed(300, 5, 2)["data"]
    assert all(judge.is_equal(u, v) for u, v in zip(a, b, strict=True)), (
        "the same seed must give the same data whatever the global random state"
    )
    assert judge.differ(a[0], c[0], atol=0, rtol=0), "different seeds must give different data"
    for part in (a[1], a[3]):
        assert set(part.tolist()) == {0, 1}, "both classes must appear in each split"


@pytest.mark.task("ch03.1")
def test_data_leaves_the_global_generator_alone():
    """make_xor_data draws from its own generator: the global random state is left as it was."""
    with because("make_xor_data(64, 9) raised"):
        seen = data_under_global_seed(64, 9, 31)
    shapes = [tuple(t.shape) if type(t) is torch.Tensor else None for t in seen["data"]]
    assert len(shapes) == 4 and None not in shapes and shapes[0][0] + shapes[2][0] == 64, (
        f"make_xor_data(64, 9) returned parts of shapes {shapes}: expected X_train, y_train, "
        "X_val, y_val with 64 rows in all"
    )
    X_train, y_train, X_val, y_val = seen["data"]  # the draws count only beside real data
    for X, name in ((X_train, "X_train"), (X_val, "X_val")):
        judge.answer(X, X.shape, f"make_xor_data(64, 9)'s {name}", bound=1e3)
    for y, name in ((y_train, "y_train"), (y_val, "y_val")):
        judge.all_true((y == 0) | (y == 1), f"make_xor_data(64, 9)'s {name} holds 0/1 labels")
    judge.equal(
        seen["next_draws"],
        seen["untouched"],
        "after make_xor_data(64, 9) the global generator gives other numbers than it would "
        "have: the data was drawn from (or the seed set on) the global RNG. Draw from "
        "torch.Generator().manual_seed(seed), so the data depends on the seed alone and the "
        "training run's own random draws stay as they were",
    )


@pytest.mark.task("ch03.1")
@examples(16)
@given(n=st.integers(1, 120), seed=st.integers(0, 10_000))
def test_data_agrees_with_the_reference(n, seed):
    """make_xor_data equals the documented recipe for tiny and odd n (int(0.8 * n) rounds down)."""
    with because(f"make_xor_data({n}, {seed}) raised"):
        got = mm.make_xor_data(n, seed)
    want = ref.make_xor_data(n, seed)
    assert same_split(got, want), (
        f"make_xor_data({n}, {seed}) differs from the recipe (training sizes "
        f"{tuple(got[0].shape)} vs {tuple(want.X_train.shape)}): one generator seeded with "
        "seed, randn(n, 2) then randperm(n), the first int(0.8 * n) permuted points train"
    )


# ---------------------------------------------------------------- ch03.2


@pytest.mark.task("ch03.2")
def test_init_other_sizes_follow_the_recipe():
    """init_mlp draws W1 then W2 from the generator, scaled by 1/sqrt(fan_in), biases zero, all leaves."""
    got = initialised(7, 3, 5, 9)
    want = recipe_params(7, 3, 5, 9)
    for k in want:
        assert k in got and got[k]["value"].shape == want[k].shape, (
            f"{k} has the wrong shape for X @ W1 -> (N, hidden), h @ W2 -> (N, n_classes)"
        )
        judge.close(
            got[k]["value"],
            want[k].detach(),
            f"{k} is not randn(fan_in, fan_out, generator) / sqrt(fan_in) drawn W1 then W2 "
            "(biases zero)",
            atol=1e-6,
            rtol=1e-5,
        )
        assert got[k]["is_leaf"] and got[k]["requires_grad"], (
            f"{k} must be a leaf tensor that requires grad"
        )


@probe
def two_inits_from_one_generator(seed):
    """Two init_mlp(4, 4, 4, g) calls sharing one generator: their W1."""
    g = torch.Generator().manual_seed(seed)
    a = mm.init_mlp(4, 4, 4, g)
    b = mm.init_mlp(4, 4, 4, g)
    return a["W1"].detach().clone(), b["W1"].detach().clone()


@pytest.mark.task("ch03.2")
def test_init_advances_the_generator():
    """Two calls sharing one generator draw different weights."""
    a, b = two_inits_from_one_generator(3)
    for w in (a, b):
        assert type(w) is torch.Tensor and tuple(w.shape) == (4, 4), (
            f"init_mlp(4, 4, 4, g)['W1'] is {brief(w)}, expected a [4, 4] tensor"
        )
        judge.all_finite(w, "init_mlp(4, 4, 4, g)['W1'] must hold finite weights")
    assert judge.differ(a, b, atol=0, rtol=0), (
        "two calls sharing one generator must draw different weights: the generator must be "
        "used (and advanced), not re-seeded or ignored"
    )


@probe
def grads_after_backward(seed):
    """init_mlp(3, 8, 3, ...), then backward of a ReLU MLP's loss: which .grad is None."""
    params = mm.init_mlp(3, 8, 3, torch.Generator().manual_seed(seed))
    g = torch.Generator().manual_seed(seed + 1)
    X = torch.randn(16, 3, generator=g)
    F.cross_entropy(relu_mlp(params, X), torch.randint(0, 3, (16,), generator=g)).backward()
    return {k: p.grad is None for k, p in params.items()}


@pytest.mark.task("ch03.2")
def test_init_gradients_reach_every_tensor():
    """After backward every tensor init_mlp returned has a gradient."""
    missing = [k for k, none in grads_after_backward(0).items() if none]
    assert not missing, (
        f"after backward {missing} have .grad None: every returned tensor must be a leaf that "
        "requires grad (scale first, then requires_grad_())"
    )


@pytest.mark.task("ch03.2")
@examples(15)
@given(
    d_in=st.integers(1, 9),
    hidden=st.integers(1, 9),
    n_classes=st.integers(1, 6),
    seed=st.integers(0, 10_000),
)
def test_init_agrees_with_the_reference(d_in, hidden, n_classes, seed):
    """init_mlp equals the recipe for any sizes, size 1 included."""
    with because(f"init_mlp({d_in}, {hidden}, {n_classes}, g) raised"):
        got = initialised(d_in, hidden, n_classes, seed)
    want = ref.init_mlp(d_in, hidden, n_classes, torch.Generator().manual_seed(seed))
    assert list(got) == list(want), f"init_mlp returns the keys {list(want)}, in that order"
    for k, t in want.items():
        ok = got[k]["value"].shape == t.shape and judge.is_close(
            got[k]["value"], t.detach(), atol=1e-6, rtol=1e-5
        )
        assert ok and got[k]["is_leaf"] and got[k]["requires_grad"], (
            f"init_mlp({d_in}, {hidden}, {n_classes}, g)[{k!r}] is not the recipe's leaf: "
            "randn(fan_in, fan_out, generator) / sqrt(fan_in), W1 then W2, zero biases, "
            "requires_grad_() last"
        )


# ---------------------------------------------------------------- ch03.3


@pytest.mark.task("ch03.3")
def test_forward_is_not_an_affine_map():
    """mlp_forward is not affine: f(x) + f(-x) differs from 2 f(0)."""
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
    """mlp_forward returns (N, n_classes) logits in the inputs' dtype."""
    g = torch.Generator().manual_seed(12)
    params = {
        "W1": torch.randn(3, 7, generator=g, dtype=torch.float64),
        "b1": torch.randn(7, generator=g, dtype=torch.float64),
        "W2": torch.randn(7, 2, generator=g, dtype=torch.float64),
        "b2": torch.randn(2, generator=g, dtype=torch.float64),
    }
    X = torch.randn(1, 3, generator=g, dtype=torch.float64)
    got = mm.mlp_forward(params, X)
    assert got.dtype == torch.float64 and tuple(got.shape) == (1, 2), (
        f"mlp_forward must return (N, n_classes) logits in the dtype of its inputs; got {brief(got)}"
    )
    judge.close(
        got,
        relu_mlp(params, X),
        "mlp_forward must compute relu(X @ W1 + b1) @ W2 + b2",
        atol=1e-8,
        rtol=1e-5,
    )


@pytest.mark.task("ch03.3")
@examples(15)
@given(
    n=st.integers(1, 6),
    d_in=st.integers(1, 5),
    hidden=st.integers(1, 5),
    n_classes=st.integers(1, 5),
    seed=st.integers(0, 10_000),
    order=st.permutations(["W1", "b1", "W2", "b2"]),
)
def test_forward_agrees_with_the_formula(n, d_in, hidden, n_classes, seed, order):
    """mlp_forward equals relu(X @ W1 + b1) @ W2 + b2 for any sizes, with params' keys in any order."""
    g = torch.Generator().manual_seed(seed)
    drawn = {
        "W1": torch.randn(d_in, hidden, generator=g),
        "b1": torch.randn(hidden, generator=g),
        "W2": torch.randn(hidden, n_classes, generator=g),
        "b2": torch.randn(n_classes, generator=g),
    }
    params = {k: drawn[k] for k in order}  # a dict is read by name, whatever its order
    X = torch.randn(n, d_in, generator=g)
    case = f"X ({n}, {d_in}), hidden {hidden}, {n_classes} classes, params keyed {list(order)}"
    with because(
        f"mlp_forward raised for {case}: params is a dict keyed by name; take each tensor by "
        "its name (params['W1']), not by its position in the dict"
    ):
        got = mm.mlp_forward(params, X)
    want = relu_mlp(params, X)
    assert got.shape == want.shape and judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
        f"mlp_forward differs from relu(X @ W1 + b1) @ W2 + b2 for {case}: "
        f"{first_difference(got, want)}. params is read by name (params['W1']); unpacking "
        "params.values() depends on the order the caller built the dict in"
    )


# ---------------------------------------------------------------- ch03.4


@pytest.mark.task("ch03.4")  # its second point went to the stays-on-the-device test
def test_cross_entropy_extreme_and_mixed_logits():
    """cross_entropy and its gradient stay finite and equal PyTorch's at logits of size 1e4."""
    g = torch.Generator().manual_seed(21)
    logits = torch.randn(64, 3, generator=g) * 1e4
    logits[::4] = 0.0
    targets = torch.randint(0, 3, (64,), generator=g)
    got, grad = loss_and_gradient(logits, targets)
    want = F.cross_entropy(logits, targets)
    assert bool(torch.isfinite(got)) and judge.is_close(got, want, atol=1e-8, rtol=1e-4), (
        "cross_entropy must stay finite and equal to F.cross_entropy for logits of size 1e4 "
        "(exp overflows unless each row is shifted by its max)"
    )
    assert grad is not None, "cross_entropy gave no gradient for huge logits"
    assert tuple(grad.shape) == tuple(logits.shape), (
        f"the gradient has shape {tuple(grad.shape)}, expected the logits' {tuple(logits.shape)}"
    )
    judge.all_finite(
        grad, "the gradient of a stable cross-entropy must be finite even for huge logits"
    )


@pytest.mark.task("ch03.4")
def test_cross_entropy_many_classes_float64():
    """cross_entropy keeps float64 and equals F.cross_entropy with 40 classes."""
    g = torch.Generator().manual_seed(22)
    logits = torch.randn(5, 40, generator=g, dtype=torch.float64)
    targets = torch.tensor([39, 0, 7, 7, 21])
    got = mm.cross_entropy(logits, targets)
    assert got.dtype == torch.float64, "the loss must keep the logits' dtype"
    judge.close(
        got,
        F.cross_entropy(logits, targets),
        "cross_entropy must equal the batch mean of -log softmax(logits)[i, target_i] over the class axis",
        atol=1e-8,
        rtol=1e-10,
    )


@pytest.mark.task("ch03.4")
def test_cross_entropy_single_example():
    """For one example the loss is log(sum_j exp(z_j)) - z_target."""
    logits = torch.tensor([[2.0, 1.0, 0.0]])
    got = mm.cross_entropy(logits, torch.tensor([2]))
    want = math.log(math.exp(2) + math.exp(1) + 1) - 0.0
    judge.close(
        got,
        torch.tensor(want),
        "for one example the loss is log(sum_j exp(z_j)) - z_target",
        atol=1e-12,
        rtol=1e-5,
    )


@pytest.mark.task("ch03.4")
@pytest.mark.points(2)
def test_cross_entropy_by_hand_in_float64_and_one_class():
    """cross_entropy works without F.cross_entropy, log_softmax or nll_loss, also in float64."""
    g = torch.Generator().manual_seed(23)
    cases = [
        (torch.randn(9, 9, generator=g, dtype=torch.float64) * 30, torch.arange(9) % 9),
        (torch.randn(3, 1, generator=g), torch.zeros(3, dtype=torch.int64)),
    ]
    from harness import source_rules  # the tests' side reads the submitted source itself

    rule = source_rules.NO_LIBRARY_LOSS
    for logits, targets in cases:
        value, error, used = loss_without_library_losses(logits, targets)
        written = source_rules.broken("ch03", "manual_mlp", "cross_entropy", rule)
        assert written is None, f"{written}" + ("" if error or used else source_rules.UNSEEN)
        assert error is None and not used, (
            "cross_entropy must be written by hand: it may not call F.cross_entropy, "
            "log_softmax or nll_loss (torch.logsumexp is allowed)"
        )
        judge.close(
            value,
            F.cross_entropy(logits, targets),
            "the hand-written loss must equal F.cross_entropy",
            atol=1e-7,
            rtol=1e-6,
        )


@pytest.mark.task("ch03.4")
@pytest.mark.points(2)
@examples(25)
@given(
    n=st.integers(1, 8),
    c=st.integers(1, 8),
    scale=st.sampled_from([0.0, 0.1, 1.0, 30.0, 1000.0, 1e4]),
    double=st.booleans(),
    ties=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_cross_entropy_and_its_gradient_on_generated_logits(n, c, scale, double, ties, seed):
    """cross_entropy and its gradient equal F.cross_entropy's for any N, C (square too) and scale, all-equal logits and rows whose largest logit is tied."""
    g = torch.Generator().manual_seed(seed)
    dtype = torch.float64 if double else torch.float32
    logits = torch.randn(n, c, generator=g, dtype=dtype)
    # only -1, 0 and 1: most rows hold their largest value more than once. Not beyond scale
    # 30: there float32 rounds the row's logsumexp (max + log 2 for a tie) by ~1e-3 of the
    # gradient, so torch.logsumexp's own gradient (exp(z - lse)) is off by as much
    ties = ties and scale <= 30
    if ties:
        logits = logits.round().clamp(-1, 1)
    logits = logits * scale
    targets = torch.randint(0, c, (n,), generator=g)
    with because(f"cross_entropy raised on logits ({n}, {c})"):
        got, grad = loss_and_gradient(logits, targets)
    leaf = logits.clone().requires_grad_()
    want = F.cross_entropy(leaf, targets)
    want.backward()
    assert (
        isinstance(got, torch.Tensor)
        and got.dim() == 0
        and got.dtype == dtype
        and judge.is_close(got, want.detach(), atol=1e-5, rtol=1e-4)
    ), (
        f"cross_entropy on logits ({n}, {c}) of scale {scale:g} ({dtype}"
        f"{', tied largest logits' if ties else ''}) gave {brief(got)}, F.cross_entropy "
        f"{want.item():.6g}: a 0-d mean, normalised over the class axis, stable (shift by "
        "the row max; every entry equal to it still counts once per entry) and in the "
        "logits' dtype"
    )
    assert grad is not None and judge.is_close(grad, leaf.grad, atol=1e-6, rtol=1e-4), (
        f"the gradient of cross_entropy on logits ({n}, {c}) differs from F.cross_entropy's "
        "(softmax - one_hot) / N"
    )


# ---------------------------------------------------------------- on another device


@probe
def on_meta(dtype):
    """mlp_forward and cross_entropy on tensors of the meta device (a device other than the
    CPU that holds no values, like a GPU you don't have): each result's device, dtype and
    shape, or what was raised."""
    meta, dt = torch.device("meta"), getattr(torch, dtype)

    seen = devices.described_on_meta

    shapes = {"W1": (2, 4), "b1": (4,), "W2": (4, 3), "b2": (3,)}
    params = {k: torch.zeros(s, dtype=dt, device=meta).requires_grad_() for k, s in shapes.items()}
    X = torch.zeros(5, 2, dtype=dt, device=meta)
    logits = torch.zeros(5, 3, dtype=dt, device=meta).requires_grad_()
    targets = torch.zeros(5, dtype=torch.long, device=meta)
    return {
        "mlp_forward": seen(mm.mlp_forward, params, X),
        "cross_entropy": seen(mm.cross_entropy, logits, targets),
    }


def check_on_meta(name, call, want_shape):
    """``name`` on meta tensors of both float dtypes returns there, in their dtype."""
    for dtype in ("float32", "float64"):
        seen = on_meta(dtype)[name]
        if "cannot tell" in seen:
            continue
        got = (
            "raised " + seen["raised"]
            if "raised" in seen
            else (f"gave {seen['dtype']} {list(seen['shape'])} on {seen['device']}")
        )
        assert "raised" not in seen and (seen["device"], seen["dtype"], seen["shape"]) == (
            "meta",
            f"torch.{dtype}",
            want_shape,
        ), (
            f"{call} on {dtype} tensors of the meta device (which stands for a GPU here) {got}, "
            f"expected torch.{dtype} {list(want_shape)} on meta: a helper tensor made without "
            "device= (torch.zeros(...) for a ReLU or a one-hot, torch.tensor(...) of more than "
            "one number) lives on the default CPU and fails on a CUDA batch; build it from the "
            "inputs (torch.zeros_like, x.new_zeros, device=x.device) or use ops that need none "
            "(clamp, gather, logsumexp)"
        )


@pytest.mark.task("ch03.3")
def test_forward_stays_on_the_inputs_device():
    """mlp_forward of parameters and X on another device (meta) returns its (N, n_classes) logits there, in their dtype; on the CPU they are right."""
    g = torch.Generator().manual_seed(41)
    params = {
        k: torch.randn(*s, generator=g, dtype=torch.float64)
        for k, s in (("W1", (2, 4)), ("b1", (4,)), ("W2", (4, 3)), ("b2", (3,)))
    }
    X = torch.randn(5, 2, generator=g, dtype=torch.float64)
    with because("mlp_forward raised on float64 CPU parameters and X[5, 2]"):
        got = mm.mlp_forward(params, X)
    want = torch.relu(X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]
    judge.close(
        got,
        want,
        "mlp_forward on float64 X[5, 2] must be relu(X W1 + b1) W2 + b2",
        atol=1e-9,
        rtol=1e-9,
    )
    check_on_meta("mlp_forward", "mlp_forward(params, X[5, 2])", (5, 3))


@pytest.mark.task("ch03.4")
def test_cross_entropy_stays_on_the_inputs_device():
    """cross_entropy of logits and targets on another device (meta) returns its 0-d loss there, in the logits' dtype; on the CPU it is F.cross_entropy's."""
    g = torch.Generator().manual_seed(42)
    logits = torch.randn(5, 3, generator=g, dtype=torch.float64)
    targets = torch.tensor([2, 0, 1, 1, 2])
    with because("cross_entropy raised on float64 CPU logits[5, 3]"):
        got = mm.cross_entropy(logits, targets)
    judge.close(
        got,
        F.cross_entropy(logits, targets),
        "cross_entropy on float64 logits[5, 3] must equal F.cross_entropy",
        atol=1e-9,
        rtol=1e-9,
    )
    check_on_meta("cross_entropy", "cross_entropy(logits[5, 3], targets[5])", ())


# ---------------------------------------------------------------- ch03.5


@probe
def sgd_training_run(steps, lr):
    """Five full-batch steps of a ReLU MLP with sgd_step, plus a tensor that never gets a
    gradient: losses, whether the unused tensor is the same object with its values, whether
    every tensor stayed a leaf, and for each step and tensor its version counter and value
    before and after the sgd_step call."""
    g = torch.Generator().manual_seed(0)
    params = recipe_params(2, 4, 2, 0)
    X = torch.randn(32, 2, generator=g)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    unused = torch.ones(3, requires_grad=True)
    params["unused"] = unused
    tensors = dict(params)
    losses, updates = [], []
    for _ in range(steps):
        for p in params.values():
            p.grad = None
        loss = F.cross_entropy(relu_mlp(params, X), y)
        loss.backward()
        before = {k: (t._version, t.detach().clone()) for k, t in tensors.items()}
        mm.sgd_step(params, lr)
        updates.append(
            {k: (*before[k], t._version, t.detach().clone()) for k, t in tensors.items()}
        )
        losses.append(loss.item())
    return {
        "losses": losses,
        "unused_same": params["unused"] is unused,
        "unused": unused.detach().clone(),
        "leaves": all(getattr(p, "is_leaf", False) for p in params.values()),
        "updates": updates,
    }


@pytest.mark.task("ch03.5")
def test_sgd_step_skips_missing_grads_and_trains_repeatedly():
    """Repeated sgd_step calls train, keep every tensor a leaf changed in place where autograd's version counter sees it, and leave gradient-less tensors alone."""
    with because("sgd_step raised during repeated training steps"):
        seen = sgd_training_run(5, 0.1)
    uncounted = sorted(
        {
            k
            for step in seen["updates"]
            for k, (v0, x0, v1, x1) in step.items()
            if v1 == v0 and not judge.is_equal(x1, x0)
        }
    )
    assert not uncounted, (
        f"sgd_step changed the values of {uncounted} while their version counters stayed "
        "put: the update went behind autograd's back (p.data -= ..., p.data = ...), so a "
        "graph that had saved p would silently use the new values; update p itself in place "
        "under torch.no_grad() (p -= lr * p.grad), which autograd counts"
    )
    assert seen["unused_same"] and judge.is_equal(seen["unused"], torch.ones(3)), (
        "a tensor whose grad is None must be left untouched by the update"
    )
    assert seen["leaves"], "the update must keep every tensor a leaf (no graph recorded)"
    assert seen["losses"][-1] < seen["losses"][0], (
        "five small steps against the gradient must lower the loss"
    )


@probe
def sgd_step_in_grad_modes(lr):
    """sgd_step called inside the caller's torch.set_grad_enabled(False) block, then inside
    a (True) one: for each, the mode it asked for, grad mode right after the call (still in
    the block), and the tensor's value and leafness afterwards."""
    seen = []
    for enabled in (False, True):
        p = torch.tensor([1.0, -2.0], requires_grad=True)
        p.grad = torch.tensor([0.5, 0.25])
        with torch.set_grad_enabled(enabled):
            mm.sgd_step({"p": p}, lr)
            after = torch.is_grad_enabled()
        seen.append(
            {"enabled": enabled, "after": after, "value": p.detach().clone(), "leaf": p.is_leaf}
        )
    return seen


@pytest.mark.task("ch03.5")
def test_sgd_step_leaves_the_callers_grad_mode_alone():
    """sgd_step called with grad mode off (inside torch.no_grad()) or on updates the tensors and leaves grad mode as the caller had it."""
    with because("sgd_step raised when called inside the caller's torch.no_grad() block"):
        seen = sgd_step_in_grad_modes(0.5)
    for case in seen:
        where = "inside torch.no_grad()" if not case["enabled"] else "with grad mode on"
        assert case["after"] is case["enabled"], (
            f"sgd_step called {where} left grad mode {'on' if case['after'] else 'off'}: "
            "the caller's grad mode is theirs; `with torch.no_grad():` puts back whatever mode "
            "it found, torch.set_grad_enabled(False) ... (True) turns it on for a caller that "
            "had it off"
        )
        judge.close(
            case["value"],
            torch.tensor([0.75, -2.125]),
            f"sgd_step(lr=0.5) called {where} must still move p by -lr * grad",
            atol=1e-6,
            rtol=1e-6,
        )
        assert case["leaf"], f"sgd_step called {where} must keep p a leaf (no graph recorded)"


@probe
def first_step_moves():
    """The book's first step on the linear network, the update made by the student's
    sgd_step (the parameters and loss built here): each tensor's largest single-entry move."""
    torch.manual_seed(0)
    X = torch.randn(2000, 2)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    tr = torch.randperm(2000)[:1600]
    params = recipe_params(2, 16, 2, 1)
    before = {k: v.detach().clone() for k, v in params.items()}
    F.cross_entropy(linear_mlp(params, X[tr]), y[tr]).backward()
    mm.sgd_step(params, 0.5)
    return {k: (params[k].detach() - before[k]).abs().max().item() for k in before}


@pytest.mark.task("ch03.5")
@pytest.mark.points(2)
def test_sgd_step_reproduces_the_books_first_step():
    """sgd_step at lr 0.5 after the book's first backward moves each tensor by the book's table."""
    moved = first_step_moves()
    book = {"W1": 0.1048, "b1": 0.0053, "W2": 0.1918, "b2": 0.0062}
    for k, want in book.items():
        judge.number(
            moved[k],
            want,
            "one sgd_step at lr 0.5 after the book's first backward must move each tensor by "
            "the book's table (largest single-entry change)",
            abs=1e-4,
            rel=1e-6,
        )


@probe
def generated_sgd_step(values, grads, lr, frozen=(), computed=()):
    """sgd_step on a dict of tensors made from ``values`` (possibly none): each a leaf that
    requires grad unless its name is in ``frozen`` (frozen after its backward: it keeps the
    .grad it received) or in ``computed`` (a non-leaf, the result of an operation on a leaf
    that requires grad, as the chapter's broken init makes: its .grad is None), with .grad
    from ``grads`` (None: no gradient). Afterwards, for each entry: whether it is still the
    same tensor object, a leaf, whether it requires grad, and its value."""
    params = {}
    for k, v in values.items():
        if k in computed:
            params[k] = v.clone().requires_grad_() * 1
        else:
            params[k] = v.clone().requires_grad_(k not in frozen)
            params[k].grad = None if grads[k] is None else grads[k].clone()
    originals = dict(params)
    with warnings.catch_warnings():  # reading a non-leaf's .grad warns; None is the answer
        warnings.simplefilter("ignore", UserWarning)
        mm.sgd_step(params, lr)
    return {
        k: {
            "same_object": params.get(k) is t,
            "is_leaf": t.is_leaf,
            "requires_grad": t.requires_grad,
            "value": t.detach().clone(),
        }
        for k, t in originals.items()
    }


@pytest.mark.task("ch03.5")
@examples(9)  # beside the 8 examples below
# float64 at an lr float32 cannot hold, beside empty and 0-d tensors, every run
@example(
    shapes=[(4, 4), (0,), ()],
    missing=[False] * 4,
    frozen=[False] * 4,
    computed=[False] * 4,
    lr=0.01,
    double=True,
    seed=1,
)
@example(
    shapes=[(2, 0), (3,)],
    missing=[False, True, False, False],
    frozen=[False] * 4,
    computed=[False] * 4,
    lr=0.5,
    double=False,
    seed=2,
)
# tensors that no longer require grad but hold a .grad (frozen after their backward), beside
# frozen ones without a .grad and trained ones, every run
@example(
    shapes=[(3,), (2, 3), ()],
    missing=[False, False, True, False],
    frozen=[True, False, True, False],
    computed=[False] * 4,
    lr=0.5,
    double=False,
    seed=3,
)
@example(
    shapes=[(), (4, 4)],
    missing=[False] * 4,
    frozen=[True] * 4,
    computed=[False] * 4,
    lr=2.0,
    double=True,
    seed=4,
)
# the edges of the domain, every run: no tensor at all, tensors none of which has a .grad,
# non-leaves (results of an operation, .grad None) beside leaves, and a negative lr
@example(
    shapes=[],
    missing=[False] * 4,
    frozen=[False] * 4,
    computed=[False] * 4,
    lr=0.5,
    double=False,
    seed=5,
)
@example(
    shapes=[(2, 3), (), (0,)],
    missing=[True] * 4,
    frozen=[False, True, False, False],
    computed=[False] * 4,
    lr=0.5,
    double=True,
    seed=6,
)
@example(
    shapes=[(3,), (2, 2), (), (0,)],
    missing=[False] * 4,
    frozen=[False] * 4,
    computed=[True, False, True, False],
    lr=-0.5,
    double=False,
    seed=7,
)
@example(
    shapes=[(2, 3)],
    missing=[False] * 4,
    frozen=[False] * 4,
    computed=[True] * 4,
    lr=0.01,
    double=True,
    seed=8,
)
@given(
    shapes=st.lists(
        st.sampled_from([(), (1,), (3,), (2, 3), (4, 4), (0,), (2, 0)]), min_size=0, max_size=4
    ),
    missing=st.lists(st.booleans(), min_size=4, max_size=4),
    frozen=st.lists(st.booleans(), min_size=4, max_size=4),
    computed=st.lists(st.booleans(), min_size=4, max_size=4),
    lr=st.sampled_from([0.0, 0.01, 0.5, 2.0, -0.5]),
    double=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_sgd_step_on_generated_tensors(shapes, missing, frozen, computed, lr, double, seed):
    """sgd_step moves each tensor whose .grad is not None by -lr * grad in place, any shape (0-d and empty included) and dtype, whether or not it still requires grad, for any lr, and skips every other entry: missing grads, non-leaves, and a dict with nothing to update."""
    g = torch.Generator().manual_seed(seed)
    dtype = torch.float64 if double else torch.float32
    values = {f"p{k}": torch.randn(s, generator=g, dtype=dtype) for k, s in enumerate(shapes)}
    computed_names = [k for i, k in enumerate(values) if computed[i]]
    frozen_names = [k for i, k in enumerate(values) if frozen[i] and k not in computed_names]
    grads = {
        k: None
        if missing[i] or k in computed_names
        else torch.randn(v.shape, generator=g, dtype=dtype)
        for i, (k, v) in enumerate(values.items())
    }
    kinds = [
        "non-leaf" if k in computed_names else "frozen" if k in frozen_names else "leaf"
        for k in values
    ]
    present = sum(grads[k] is not None for k in values)
    called = (
        f"sgd_step(params, lr={lr}) on {len(values)} {dtype} tensors (shapes {shapes}, kinds "
        f"{kinds}, {present} with a .grad)"
    )
    with because(
        f"{called} raised: the contract covers any dict of tensors: every tensor whose .grad "
        "is not None is updated (0-d or empty too, an empty one trivially, also one that no "
        "longer requires grad), every other entry is skipped (a non-leaf's .grad is None), "
        "and a dict with nothing to update (empty, or no .grad anywhere) is an ordinary call "
        "that changes nothing. An optimizer or a batched (foreach) update built over the "
        "tensors refuses non-leaves or an empty list of them; look at what the update "
        "is built on, and at what it assumes about the list it is handed"
    ):
        after = generated_sgd_step(values, grads, lr, frozen_names, computed_names)
    for k, seen in after.items():
        want = values[k] if grads[k] is None else values[k] - lr * grads[k]
        if k in computed_names:
            assert (
                seen["same_object"]
                and not seen["is_leaf"]
                and seen["requires_grad"]
                and judge.is_equal(seen["value"], values[k])
            ), (
                f"{called}: the non-leaf {k} (.grad None) must be left as it was, the same "
                "object with its values: only tensors whose .grad is not None are updated"
            )
            continue
        assert seen["same_object"] and seen["is_leaf"], (
            "sgd_step must update each tensor in place (the same leaf object)"
        )
        assert seen["requires_grad"] == (k not in frozen_names), (
            f"sgd_step changed whether {k} requires grad (it was "
            f"{k not in frozen_names}): the update changes values only"
        )
        if k in frozen_names and grads[k] is not None and lr != 0 and values[k].numel():
            assert judge.is_close(seen["value"], want, atol=1e-6, rtol=1e-6, dtype=dtype), (
                f"sgd_step(lr={lr}) left {k} where it was, though its .grad is not None: "
                f"{k} no longer requires grad (frozen after its backward) but still holds the "
                "gradient it received, and the contract updates every tensor whose .grad is "
                "not None. Look at what decides which tensors are updated: the .grad alone, "
                "not requires_grad (nor is_leaf or anything else)"
            )
        tol = 1e-12 if double else 1e-6  # float64 tensors are updated in float64
        assert seen["value"].dtype == dtype and judge.is_close(
            seen["value"], want, atol=tol, rtol=tol
        ), (
            f"sgd_step(lr={lr}) must move each tensor by -lr * grad (none where grad is None), "
            "keeping its dtype and, for float64 tensors, float64's precision (no float32 "
            "intermediate such as torch.tensor(lr) or .float()); a negative lr moves along "
            "the gradient"
        )


# ---------------------------------------------------------------- ch03.6


@probe
def report_with_nonleaf_and_overflow():
    """step_report on a leaf, a non-leaf and a tensor set to inf after backward."""
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    nonleaf = leaf * 3
    big = torch.tensor([1.0, 1.0], requires_grad=True)
    params = {"big": big, "nonleaf": nonleaf, "leaf": leaf}
    before = {k: v.detach().clone() for k, v in params.items()}
    (nonleaf.sum() + big.sum()).backward()
    with torch.no_grad():
        big[0] = float("inf")
        leaf -= torch.tensor([0.5, -2.5])
    return mm.step_report(before, params)


@probe
def report_with_retained_nonleaf():
    """step_report on a leaf and a non-leaf made from it that retains its grad (its .grad is
    filled by backward), after backward and one update of the leaf."""
    raw = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    kept = raw * 2
    kept.retain_grad()
    params = {"raw": raw, "kept": kept}
    before = {k: v.detach().clone() for k, v in params.items()}
    (kept**2).sum().backward()
    with torch.no_grad():
        raw -= 0.1 * raw.grad
    return mm.step_report(before, params)


@pytest.mark.task("ch03.6")
@pytest.mark.points(2)
def test_step_report_flags_non_leaves_and_overflow():
    """Non-leaves report no gradient, even one that retains its grad; a tensor holding inf is not finite; norms and moves are right."""
    rows = {r.name: r for r in report_with_nonleaf_and_overflow()}
    assert list(rows) == ["big", "nonleaf", "leaf"], "one row per tensor, in the order of params"
    assert not rows["nonleaf"].is_leaf and rows["nonleaf"].grad_is_none, (
        "a non-leaf tensor must be reported is_leaf=False with no gradient: backward never fills it"
    )
    retained = {r.name: r for r in report_with_retained_nonleaf()}
    assert list(retained) == ["raw", "kept"], "one row per tensor, in the order of params"
    kept = retained["kept"]
    assert not kept.is_leaf and kept.grad_is_none and judge.is_number(kept.grad_norm, 0.0), (
        "step_report on kept = raw * 2 with kept.retain_grad() gave is_leaf="
        f"{kept.is_leaf}, grad_is_none={kept.grad_is_none}, grad_norm={kept.grad_norm!r}; "
        "expected False, True, 0.0: a non-leaf reports no gradient whether or not it retains "
        "one (retain_grad() keeps a copy for inspection; the update never uses it), so decide "
        "by is_leaf, not by whether .grad happens to be filled"
    )
    assert not retained["raw"].grad_is_none and retained["raw"].grad_norm > 0, (
        "the leaf raw behind kept must report its gradient (the loss reached it)"
    )
    assert not rows["big"].finite, "a tensor holding inf must be reported finite=False"
    assert rows["leaf"].finite and judge.is_number(
        rows["leaf"].grad_norm, 3 * math.sqrt(2), abs=1e-12, rel=1e-6
    ), "grad_norm must be the L2 norm of the tensor's .grad"
    judge.number(
        rows["leaf"].moved,
        2.5,
        "moved must be the largest absolute change of any single entry",
        abs=1e-12,
        rel=1e-6,
    )


@probe
def report_after_backward_only(seed):
    """step_report after backward and no update."""
    params = recipe_params(3, 3, 3, seed)
    before = {k: v.detach().clone() for k, v in params.items()}
    g = torch.Generator().manual_seed(seed + 1)
    F.cross_entropy(
        relu_mlp(params, torch.randn(9, 3, generator=g)), torch.arange(9) % 3
    ).backward()
    return [
        (r, type(r.grad_norm).__name__, type(r.moved).__name__)
        for r in mm.step_report(before, params)
    ]


@pytest.mark.task("ch03.6")
def test_step_report_on_a_frozen_step():
    """Without an update nothing moved; grad_norm and moved are Python floats."""
    seen = report_after_backward_only(4)
    rows = [r for r, _, _ in seen]
    assert all(r.moved == 0.0 for r in rows), "no update happened, so nothing moved"
    assert rows[0].finite and not rows[0].grad_is_none and rows[0].grad_norm > 0, (
        "a healthy tensor with a gradient must report it"
    )
    assert all(a == "float" and b == "float" for _, a, b in seen), (
        "grad_norm and moved must be Python floats"
    )


def random_step(seed):
    """A step with a random mix of healthy tensors (0-d and empty ones among them), constants
    that require no grad, missing gradients, gradients holding inf or nan, tensors set to inf,
    tensors or gradients whose finite entries are near float32's largest, float16 tensors
    whose gradient's squares overflow (entries above 256) or underflow (entries near 1e-4)
    float16 though its norm does not, bfloat16 and float64 tensors, and an update of random
    size."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(1,), (3,), (2, 2), (2, 3), (), (0,), (2, 0)]
    params, grads, moves = {}, {}, {}
    for k in range(4):
        shape = shapes[int(torch.randint(0, len(shapes), (1,), generator=g))]
        kind = int(torch.randint(0, 10, (1,), generator=g))
        dtype = {7: torch.float16, 8: torch.float16, 9: (torch.bfloat16, torch.float64)[k % 2]}
        dtype = dtype.get(kind, (torch.float32, torch.float64)[kind == 0 and k % 2])
        params[f"t{k}"] = torch.randn(shape, generator=g).to(dtype).requires_grad_()
        grad = torch.randn(shape, generator=g) * 3
        if kind == 7:  # |entries| 300 and more: their squares overflow float16
            grad = grad * 100 + grad.sign() * 300
        elif kind == 8:  # entries near 1e-4: their squares underflow float16
            grad = grad * 3e-5
        grad = grad.to(dtype)
        if kind == 1:
            grad = None
        elif kind == 2 and grad.numel():
            grad.view(-1)[0] = float("inf")
        elif kind == 3 and grad.numel():
            grad.view(-1)[-1] = float("nan")
        elif kind in (5, 6):  # finite entries near float32's largest: their sum overflows
            with torch.no_grad():
                params[f"t{k}"].fill_(3e38 if kind == 5 else -3e38)
        grads[f"t{k}"] = grad
        moves[f"t{k}"] = (torch.randn(shape, generator=g) * 0.1, kind == 4)
    for k in list(params):  # a constant among them (a mask, a frozen table): still a leaf
        if int(torch.randint(0, 4, (1,), generator=g)) == 0:
            params[k], grads[k] = params[k].detach(), None
    return params, grads, moves


def apply_random_step(seed):
    """The step of random_step(seed) applied: (before, params). ``before`` is a dict keyed by
    name, in params' order for even seeds and in reverse for odd ones: only params fixes the
    order of the rows."""
    params, grads, moves = random_step(seed)
    names = list(params) if seed % 2 == 0 else list(reversed(params))
    before = {k: params[k].detach().clone() for k in names}
    for k, p in params.items():
        p.grad = grads[k]
        delta, overflow = moves[k]
        with torch.no_grad():
            if p.grad is not None:
                p += delta
            if overflow and p.numel():
                p.view(-1)[0] = float("inf")
    return before, params


@probe
def random_step_report(seeds):
    """step_report on apply_random_step(seed) for each seed."""
    return [mm.step_report(*apply_random_step(s)) for s in seeds]


@pytest.mark.task("ch03.6")
@pytest.mark.points(2)
def test_step_report_agrees_with_the_reference_on_random_steps():
    """step_report's rows equal the reference's on steps with missing, inf and nan gradients, constants (leaves that require no grad), overflowed, 0-d and empty tensors, float16, bfloat16 and float64 ones, with `before` in any key order."""
    seeds = list(range(30))
    with because(
        "step_report raised on a step with missing or non-finite gradients, 0-d or empty "
        "tensors, `before` given in params' key order or another one: pair before[name] with "
        "params[name], not by position; a tensor with no entries gets a row too, and nothing "
        "in it moved (moved 0.0: .max() of an empty tensor raises, so guard it)"
    ):
        reports = random_step_report(seeds)
    params_dtypes = {s: {k: p.dtype for k, p in apply_random_step(s)[1].items()} for s in seeds}
    for seed, rows in zip(seeds, reports):
        want = ref.step_report(*apply_random_step(seed))
        assert [r.name for r in rows] == [r.name for r in want], (
            "one row per tensor, in the order of params"
        )
        for r, w in zip(rows, want):
            assert r.is_leaf == w.is_leaf or not w.is_leaf, (
                f"row {w.name}: is_leaf should be True: this tensor was made by no operation; "
                "is_leaf is the tensor's own leaf property, whether or not autograd tracks it: "
                "a constant that requires no grad is a leaf too (it just never gets a .grad)"
            )
            assert (r.is_leaf, r.grad_is_none, r.finite) == (w.is_leaf, w.grad_is_none, w.finite), (
                f"row {w.name}: is_leaf/grad_is_none/finite should be {w.is_leaf}, "
                f"{w.grad_is_none}, {w.finite}: finite is False when the tensor or its gradient "
                "holds inf or nan, and only then (large finite entries, near 3e38, are finite: "
                "test each entry with torch.isfinite; a sum, mean or norm of them overflows)"
            )
            dtype = params_dtypes[seed][w.name]
            # float16/bfloat16: the reference's norm and move are rounded to the tensor's own
            # dtype; an answer that works in float32 or float64 differs by that rounding.
            # float64: both are float64's own (any summation order is within 1e-12), so a
            # float32 intermediate (~1e-7) is an error
            rel = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float64: 1e-12}.get(dtype, 1e-5)
            kept = (
                ": a float64 tensor's norm and move keep float64's precision (~1e-16), so a "
                "result ~1e-7 off was rounded to float32 on the way: look for a .float() or a "
                "float32 intermediate"
                if dtype == torch.float64
                else ""
            )
            judge.number(
                r.grad_norm,
                w.grad_norm,
                f"row {w.name} ({dtype}): grad_norm should be {w.grad_norm}, got "
                f"{r.grad_norm!r} (the L2 norm of .grad, 0.0 without one, inf or nan when the "
                "gradient holds them)"
                + (
                    kept
                    or ". A float16 gradient with entries above 256, or near 1e-4, has a norm "
                    "float16 holds although the squares of its entries do not (they overflow "
                    "to inf or underflow to 0): look at the precision in which the squares "
                    "are summed"
                ),
                abs=1e-12,
                rel=rel,
            )
            judge.number(
                r.moved,
                w.moved,
                f"row {w.name}: moved should be {w.moved}, the largest absolute change of any "
                f"single entry since before[{w.name!r}] (`before` is a dict keyed by name, here "
                f"in {'the same' if seed % 2 == 0 else 'the reverse'} key order as params: "
                "pair the two by name, not by position)" + kept,
                abs=1e-12 if dtype == torch.float64 else 1e-7,
                rel=rel,
            )


# ---------------------------------------------------------------- ch03.7


@pytest.mark.task("ch03.7")
@pytest.mark.points(2)
def test_training_history_follows_gradient_descent():
    """train_loss[k] is step k's loss before its update, val_acc[k] the accuracy after it."""
    data = recipe_data(600, 8)
    hist = trained(*data, hidden=8, lr=0.3, steps=15, seed=6)
    losses, accs = gd_run(data, 8, 0.3, 15, 6)
    problem = history_problem(hist, data, hidden=8, lr=0.3, seed=6, steps=15, default_forward=True)
    assert problem is None, (
        "the recorded history differs from full-batch gradient descent from init_mlp's "
        f"parameters: {problem}"
    )
    judge.number(
        list(hist.train_loss),
        losses,
        "the gradients must be cleared before every backward (backward adds into .grad), and "
        "train_loss[k] is the loss computed in step k",
        abs=1e-6,
        rel=1e-4,
    )
    judge.number(
        list(hist.val_acc),
        accs,
        "val_acc[k] must be the validation accuracy after update k",
        abs=1e-6,
        rel=1e-6,
    )


@pytest.mark.task("ch03.7")
def test_training_learns_xor_from_other_data_and_seeds():
    """A ReLU MLP reaches 0.9 on XOR; the same loop with a linear forward stays below 0.7."""
    data = recipe_data(1000, 5)
    hist = trained(*data, hidden=32, lr=0.5, steps=300, seed=3)
    assert hist.val_acc[-1] >= 0.9, (
        f"an MLP with a ReLU hidden layer should reach >= 0.9 validation accuracy on XOR; got "
        f"{hist.val_acc[-1]:.3f}"
    )
    lin = trained(*data, forward="linear", hidden=32, lr=0.5, steps=300, seed=3)
    assert lin.val_acc[-1] < 0.7, "training must use the forward it is given"


@pytest.mark.task("ch03.7")
def test_training_with_zero_steps_returns_the_initial_parameters():
    """Zero steps record nothing and return init_mlp's parameters."""
    data = recipe_data(50, 9)
    hist = trained(*data, hidden=5, lr=0.5, steps=0, seed=2)
    assert list(hist.train_loss) == [] and list(hist.val_acc) == [], (
        "zero steps record no loss and no accuracy"
    )
    want = recipe_params(2, 5, 2, 2)
    assert all(
        judge.is_close(hist.params[k], want[k].detach(), atol=1e-8, rtol=1e-5) for k in want
    ), "with zero steps the returned parameters are init_mlp's, from Generator().manual_seed(seed)"


def three_class_data(seed):
    """120 points in 3-D, labelled 0, 1, 2 by the largest coordinate, split 90/30: every
    class in both halves."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(120, 3, generator=g)
    y = X.argmax(dim=1)
    return X[:90], y[:90], X[90:], y[90:]


@probe
def trained_watched(X_train, y_train, X_val, y_val, **options):
    """train_mlp on the given split while autograd's backward passes are watched: the
    History, and each leaf a pass reached with its version counter and value at every such
    pass and after the call (``harness.backward.LeafSightings.found``); and for each tensor
    of the returned params whether it is a leaf, requires grad, and is one of the leaves
    the backward passes reached (None where the passes cannot be watched)."""
    with backward.leaf_sightings() as seen:
        history = mm.train_mlp(mm.XorData(X_train, y_train, X_val, y_val), **options)
    kept = {
        name: {
            "is_leaf": getattr(t, "is_leaf", None),
            "requires_grad": getattr(t, "requires_grad", None),
            "trained": seen.reached(t) if seen.found is not None else None,
        }
        for name, t in dict(history.params).items()
    }
    return history, seen.found, kept


def training_cases(seed=35, count=10):
    """(X_train, y_train, X_val, y_val, options) over train_mlp's domain: 1 to 4 features,
    labels 0 .. C-1 for C of 2 to 4, where the training labels are any set of them that
    holds the largest (all C, every one but some below it, or the largest alone: all 1s
    for C = 2) and the validation labels any of 0 .. C-1, so whichever split a solution
    reads the class count from, it is C; training sets from one example per present label
    up, a validation set of one, hidden of 1 upwards, int and float lr (0 included), 0 to
    4 steps, seeds."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    cases = []
    for k in range(count):
        d_in, classes = rng.randint(1, 4), rng.randint(2, 4)
        classes = 2 if k == 1 else classes  # labels all 1: a two-column head all the same
        below = range(classes - 1)
        kept = {0: 0, 1: 0, 2: classes - 1}.get(k % 4, rng.randint(0, classes - 1))
        present = torch.tensor(sorted(rng.sample(below, kept)) + [classes - 1])
        n_train = len(present) + rng.choice([0, 1, 5, 17])
        n_val = rng.choice([1, 1, 3, 8])
        extra = present[torch.randint(0, len(present), (n_train - len(present),), generator=g)]
        y_train = torch.cat([present, extra])
        y_train = y_train[torch.randperm(n_train, generator=g)]
        y_val = torch.randint(0, classes, (n_val,), generator=g)
        X_train = torch.randn(n_train, d_in, generator=g) + y_train[:, None].float()
        X_val = torch.randn(n_val, d_in, generator=g) + y_val[:, None].float()
        options = dict(
            hidden=rng.choice([1, 2, 5, 8]),
            lr=rng.choice([0, 1, 0.0, 0.05, 0.3, 0.9]),
            steps=rng.choice([0, 1, 2, 4]) if k else 3,
            seed=rng.randint(0, 10_000),
        )
        cases.append((X_train, y_train, X_val, y_val, options))
    # XOR points whose validation accuracy peaks before the last step (1/3, 2/3, 5/6, 2/3):
    # the History's params are the last update's, whatever step scored best
    g = torch.Generator().manual_seed(13)
    X = torch.randn(18, 2, generator=g)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    cases.append((X[:12], y[:12], X[12:], y[12:], dict(hidden=4, lr=2.0, steps=4, seed=13)))
    return cases


@probe
def trained_cases(cases):
    """train_mlp on each (X_train, y_train, X_val, y_val, options): {"value": (its
    parameters, detached, train_loss, val_acc), "leaves": {name: (is_leaf, requires_grad)}
    of the returned parameters, "grads": {name: a copy of its .grad, or None}} or what it
    raised."""
    out = []
    for X_train, y_train, X_val, y_val, options in cases:
        try:
            h = mm.train_mlp(mm.XorData(X_train, y_train, X_val, y_val), **options)
            params = {k: v.detach().clone() for k, v in h.params.items()}
            leaves = {k: (v.is_leaf, v.requires_grad) for k, v in h.params.items()}
            grads = {
                k: None if v.grad is None else v.grad.detach().clone() for k, v in h.params.items()
            }
            value = (params, list(h.train_loss), list(h.val_acc))
            out.append({"value": value, "leaves": leaves, "grads": grads})
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            out.append({"raised": f"{type(exc).__name__}: {str(exc)[:200]}"})
    return out


RETURNED_PARAMS = (
    "History.params are the trained tensors: the very leaves init_mlp made, which every "
    "sgd_step updated in place, holding the values after the last update; not copies of "
    "them, and not the values of an earlier or best-scoring step (the history records "
    "the run, it selects nothing)"
)


LAST_GRADIENT = (
    "each step clears the gradients first, then backpropagates and calls sgd_step, which "
    "leaves .grad as it is, so the trained leaves come back holding the last step's "
    "gradient; clearing or zeroing them after the update instead (the step-then-zero_grad "
    "habit) trains the same but leaves another .grad behind"
)


def training_problem(outcome, want):
    """What is wrong with one train_mlp outcome against the reference History, or None."""
    if "raised" in outcome:
        return f"it raised {outcome['raised']}"
    params, losses, accs = outcome["value"]
    if list(params) != list(want.params):
        return f"its parameters are {list(params)}, expected {list(want.params)}"
    copies = [k for k, (leaf, grad) in outcome["leaves"].items() if not (leaf and grad)]
    if copies:
        return f"the returned params {copies} are not leaves that require grad ({RETURNED_PARAMS})"
    for k, w in want.params.items():
        if not judge.is_close(params[k], w.detach(), atol=1e-5, rtol=1e-4, dtype=w.dtype):
            return (
                f"the returned {k} is {brief(params[k])}, expected the value after the last "
                f"update, {brief(w.detach())} ({RETURNED_PARAMS})"
            )
    if not judge.is_number(losses, list(want.train_loss), abs=1e-6, rel=1e-4):
        return f"train_loss is {losses}, expected {list(want.train_loss)}"
    if not judge.is_number(accs, list(want.val_acc), abs=1e-6, rel=1e-6):
        return f"val_acc is {accs}, expected {list(want.val_acc)}"
    for k, w in want.params.items():
        got, grad = outcome["grads"].get(k), w.grad
        if grad is None or got is None:
            ok = got is None and grad is None
        else:
            ok = judge.is_close(got, grad, atol=1e-5, rtol=1e-4, dtype=grad.dtype)
        if not ok:
            return (
                f"after the run the returned {k}.grad is "
                f"{'None' if got is None else brief(got)}, expected "
                f"{'None (no step, no gradient)' if grad is None else brief(grad)} "
                f"({LAST_GRADIENT})"
            )
    return None


def inputs_as_logits(params, X):
    """A forward whose logits are the inputs themselves (2 features, 2 classes); the zero
    term keeps the parameters on the loss's graph, so training runs and moves nothing."""
    return X + 0.0 * sum(p.sum() for p in params.values())


@probe
def near_tie_accuracies(X_train, y_train, X_val, y_val):
    """val_acc of a short train_mlp whose logits are the inputs (inputs_as_logits)."""
    data = mm.XorData(X_train, y_train, X_val, y_val)
    return list(mm.train_mlp(data, hidden=3, lr=0.1, steps=2, forward=inputs_as_logits).val_acc)


@pytest.mark.task("ch03.7")
def test_validation_accuracy_reads_the_largest_logit_even_for_near_ties():
    """val_acc[k] counts the rows whose largest logit is at the label, also where two logits
    differ by less than float32 probabilities can show (softmax rounds them to a tie)."""
    g = torch.Generator().manual_seed(31)
    X_train, y_train = torch.randn(8, 2, generator=g), torch.tensor([0, 1] * 4)
    X_val = torch.tensor([[-2e-8, -1e-8], [1e-30, 2e-30], [2e-30, 1e-30], [0.0, 3e-8], [5.0, 4.0]])
    y_val = torch.tensor([1, 1, 0, 1, 0])  # each at its row's strictly largest logit
    with because("train_mlp raised with a forward whose logits are the inputs"):
        got = near_tie_accuracies(X_train, y_train, X_val, y_val)
    judge.number(
        got,
        [1.0, 1.0],
        f"with logits {X_val.tolist()} and labels {y_val.tolist()} (every label at its row's "
        "largest logit) val_acc must be 1.0 after each step: accuracy compares the largest "
        "logit with the label; softmax first rounds logits 1e-8 apart to equal probabilities "
        "and argmax then picks the first",
        abs=1e-9,
        rel=0,
    )


@pytest.mark.task("ch03.7")
def test_training_takes_its_sizes_from_the_data():
    """train_mlp takes d_in and n_classes from the data (1 to 4 inputs, labels up to 1 to 3 with some classes absent or only one present, training and validation sets of any size), follows gradient descent for any hidden, lr (0 and ints included) and steps, its updates change the leaves in place where autograd sees them, and it returns those trained leaves themselves with the last update's values (not copies, not a best-scoring step's)."""
    data = three_class_data(21)
    options = dict(hidden=6, lr=0.4, steps=4, seed=5)
    with because(
        "train_mlp raised on data with 3 input features and 3 classes: d_in is "
        "X_train.shape[1] and n_classes comes from the labels (the largest label + 1), not "
        "from XOR's 2 and 2"
    ):
        hist, leaves, kept = trained_watched(*data, **options)
    want = ref.train_mlp(ref.XorData(*data), **options)
    shapes = {k: tuple(v.shape) for k, v in hist.params.items()}
    want_shapes = {k: tuple(v.shape) for k, v in want.params.items()}
    assert shapes == want_shapes, (
        f"train_mlp on data with 3 features and labels 0, 1, 2 returned parameters of shapes "
        f"{shapes}, expected {want_shapes}: init_mlp(d_in, hidden, n_classes, ...) with d_in "
        "and n_classes read from the data"
    )
    judge.number(
        list(hist.train_loss),
        list(want.train_loss),
        "train_mlp on 3-class data must follow full-batch gradient descent from init_mlp's "
        "parameters (train_loss[k] before update k)",
        abs=1e-6,
        rel=1e-4,
    )
    judge.number(
        list(hist.val_acc),
        list(want.val_acc),
        "on 3-class data val_acc[k] is the validation accuracy after update k",
        abs=1e-6,
        rel=1e-6,
    )
    for sightings in leaves or []:
        hidden = backward.unseen_change(sightings)
        assert hidden is None, (
            f"during train_mlp a parameter changed between two backward passes (first at "
            f"{first_difference(hidden[2], hidden[1])}) while its version counter stayed at "
            f"{hidden[0]}: the update went behind autograd's back (.data); train_mlp calls "
            "sgd_step, which changes each leaf in place under torch.no_grad()"
        )
    not_trained = [
        f"{k} (is_leaf {seen['is_leaf']}, requires_grad {seen['requires_grad']}, reached by "
        f"the backward passes {seen['trained']})"
        for k, seen in kept.items()
        if not (seen["is_leaf"] and seen["requires_grad"] and seen["trained"] is not False)
    ]
    assert not not_trained, (
        f"train_mlp(hidden=6, lr=0.4, steps=4) on 3-class data returned params that are not "
        f"the tensors its backward passes reached and its updates moved: "
        f"{'; '.join(not_trained)}. {RETURNED_PARAMS}"
    )
    cases = training_cases()
    outcomes = trained_cases(cases)
    failed = []
    for (*data, options), outcome in zip(cases, outcomes):
        problem = training_problem(outcome, ref.train_mlp(ref.XorData(*data), **options))
        if problem is not None:
            failed.append((data[0].numel() * (options["steps"] + 1), data, options, problem))
    if failed:
        _, (X_train, y_train, X_val, y_val), options, problem = min(failed, key=lambda f: f[0])
        called = (
            f"train_mlp(XorData(X_train {tuple(X_train.shape)}, y_train {y_train.tolist()}, "
            f"X_val {tuple(X_val.shape)}, y_val {y_val.tolist()}), {options}): {problem} "
            f"({len(failed)} of {len(cases)} runs differ)"
        )
        assert RETURNED_PARAMS not in problem and LAST_GRADIENT not in problem, called
        raise AssertionError(
            f"{called}. d_in is X_train.shape[1], "
            "n_classes the largest label + 1 (labels index the logit columns, so a class no "
            "example carries, below the largest, still has its column: the labels present "
            "need not be all of 0 .. n_classes-1, and how many distinct ones there are is "
            "not the class count), the parameters come from init_mlp with "
            "Generator().manual_seed(seed), and each step clears the gradients, computes "
            "the loss on the whole training set, backpropagates and calls sgd_step(params, "
            "lr); a training set of one example per class, a validation set of one, a "
            "hidden size of 1 and lr = 0 are ordinary inputs"
        )
