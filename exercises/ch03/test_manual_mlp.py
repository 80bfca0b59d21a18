"""Public tests for ch03 — run with `pytest exercises/ch03` (add `--impl solutions` to
see the reference pass).

Anything live (a generator, a tensor's .grad or identity, a forward function handed to
train_mlp) is reached inside a `@probe` below, which returns what it observed; the test
beside it judges that observation."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief, first_difference
except ImportError:  # (probes never use it)
    pass

mm = chapter_module("ch03", "manual_mlp")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "FORWARDS LIBRARY_LOSSES LibraryLossUsed LossCallRecorder _refuse book_data book_params "
    "linear_mlp relu_mlp"
)


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


FORWARDS = {"relu": relu_mlp, "linear": linear_mlp}


# ---------------------------------------------------------------- ch03.1 data


@pytest.mark.task("ch03.1")
def test_xor_data_shapes_labels_and_split():
    d = mm.make_xor_data(500, 3)
    shapes = [tuple(t.shape) for t in d]
    assert shapes == [(400, 2), (400,), (100, 2), (100,)], (
        f"make_xor_data(500, 3) returned shapes {shapes}; expected 80% train (400, 2), (400,) "
        "and 20% validation (100, 2), (100,)"
    )
    dtypes = [t.dtype for t in d]
    assert dtypes == [torch.float32, torch.int64, torch.float32, torch.int64], (
        f"got dtypes {dtypes}: features are float32, labels int64 class indices"
    )
    for X, y, part in ((d.X_train, d.y_train, "train"), (d.X_val, d.y_val, "val")):
        rule = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
        wrong = int((y != rule).sum())
        assert wrong == 0, (
            f"{part} labels disagree with (x0 > 0) xor (x1 > 0) on {wrong} rows: label each "
            "point after drawing it, and split X and y with the same indices"
        )
    distinct = torch.unique(torch.cat([d.X_train, d.X_val]), dim=0).shape[0]
    assert distinct == 500, (
        f"train and validation together hold {distinct} distinct points; expected the 500 "
        "drawn points, each exactly once: split by a permutation, not by drawing indices "
        "with replacement"
    )


@pytest.mark.task("ch03.1")
@pytest.mark.points(2)
def test_xor_data_is_the_books_data():
    d = mm.make_xor_data(2000, 0)
    Xtr, ytr, Xva, yva = book_data()
    same_points = judge.is_equal(d.X_train, Xtr) and judge.is_equal(d.X_val, Xva)
    assert same_points, (
        "make_xor_data(2000, 0) is not the book's data (X_train: "
        f"{first_difference(d.X_train, Xtr)}): from a generator seeded with 0 draw randn(n, 2) "
        "first, then randperm(n); the first 80% of the permutation is the training set"
    )
    same_labels = judge.is_equal(d.y_train, ytr) and judge.is_equal(d.y_val, yva)
    assert same_labels, (
        f"the points match the book's but the labels do not ({first_difference(d.y_train, ytr)})"
    )


# ---------------------------------------------------------------- ch03.2 init


@probe
def initialised(d_in, hidden, n_classes, seed, global_seed=None):
    """init_mlp(d_in, hidden, n_classes, Generator().manual_seed(seed)), after seeding the
    global generator with ``global_seed``: each tensor with its leaf and grad flags."""
    if global_seed is not None:
        torch.manual_seed(global_seed)
    params = mm.init_mlp(d_in, hidden, n_classes, torch.Generator().manual_seed(seed))
    return {
        name: {
            "value": t.detach().clone(),
            "is_leaf": t.is_leaf,
            "requires_grad": t.requires_grad,
            "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None,
        }
        for name, t in params.items()
    }


@pytest.mark.task("ch03.2")
@pytest.mark.points(2)
def test_init_gives_leaf_tensors_that_require_grad():
    params = initialised(3, 5, 4, 0)
    shapes = {k: tuple(v["value"].shape) for k, v in params.items()}
    assert shapes == {"W1": (3, 5), "b1": (5,), "W2": (5, 4), "b2": (4,)}, (
        f"init_mlp(3, 5, 4, g) returned {shapes}; X @ W1 needs W1 of shape (d_in, hidden) "
        "and W2 of shape (hidden, n_classes)"
    )
    for name, t in params.items():
        assert t["requires_grad"], f"params[{name!r}] does not require grad: backward will skip it"
        assert t["is_leaf"], (
            f"params[{name!r}] is not a leaf (grad_fn={t['grad_fn']}): it was computed from a "
            "tensor that required grad, e.g. randn(..., requires_grad=True) / sqrt(fan_in); "
            "backward never fills a non-leaf's .grad. Scale first, then call requires_grad_()"
        )


@pytest.mark.task("ch03.2")
def test_init_scales_by_fan_in():
    params = initialised(400, 100, 25, 0)
    for name, fan_in in (("W1", 400), ("W2", 100)):
        std = params[name]["value"].std().item()
        judge.number(
            std,
            1 / math.sqrt(fan_in),
            f"init_mlp(400, 100, 25, g): {name} has std {std:.4f}, expected about "
            f"1/sqrt({fan_in}) = {1 / math.sqrt(fan_in):.4f}: scale standard normals by "
            "1/sqrt(fan_in), the number of inputs each output sums over",
            abs=1e-12,
            rel=0.1,
        )
    for name, size in (("b1", 100), ("b2", 25)):
        judge.equal(params[name]["value"], torch.zeros(size), f"{name} should start at zero")


@pytest.mark.task("ch03.2")
def test_init_draws_from_the_given_generator():
    a = initialised(2, 16, 2, 1, global_seed=123)
    b = initialised(2, 16, 2, 1, global_seed=456)
    book = book_params()
    for name in ("W1", "W2"):
        alike = judge.is_equal(a[name]["value"], b[name]["value"])
        assert alike, (
            f"two calls with generators seeded alike gave different {name}: draw with "
            "randn(..., generator=generator), not from the global random state"
        )
        close_enough = judge.is_close(a[name]["value"], book[name].detach(), atol=1e-8, rtol=1e-5)
        assert close_enough, (
            f"init_mlp(2, 16, 2, Generator().manual_seed(1))[{name!r}] is not the book's "
            f"({first_difference(a[name]['value'], book[name].detach())}): draw W1 then W2 as "
            "randn(fan_in, fan_out, generator=generator) / sqrt(fan_in)"
        )


# ---------------------------------------------------------------- ch03.3 forward


@pytest.mark.task("ch03.3")  # its second point went to the hidden stays-on-the-device test
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
        f"mlp_forward differs from relu(X @ W1 + b1) @ W2 + b2 by up to {err:.3g} "
        f"({first_difference(got, want, atol=1e-4)}): {forward_mistake(params, X, got)}"
    )


def forward_mistake(params, X, got) -> str:
    """What a wrong forward's output matches among the known ways to get it wrong, or what
    the answer must be when it matches none of them (nothing is blamed that was not seen)."""
    W1, b1, W2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
    hidden = X @ W1 + b1
    known = [
        (
            (hidden @ W2 + b2,),
            "it equals the same layers with no nonlinearity — two linear layers compose to one "
            "linear map, so the hidden layer adds nothing; put a ReLU between them",
        ),
        (
            (torch.relu(torch.relu(hidden) @ W2 + b2),),
            "it equals the ReLU MLP with a ReLU on the logits too: logits may be negative, only "
            "the hidden layer takes the nonlinearity",
        ),
        (
            tuple(f(hidden) @ W2 + b2 for f in (torch.sigmoid, torch.tanh, F.gelu, F.leaky_relu)),
            "the hidden layer has a nonlinearity other than ReLU (sigmoid, tanh, GELU or a leaky "
            "ReLU): the chapter's network uses relu",
        ),
        (
            (torch.relu(X @ W1) @ W2 + b1 @ W2 + b2,),
            "b1 is added after the ReLU instead of before it: relu(X @ W1 + b1)",
        ),
        (
            (torch.relu(X @ W1.T + b1) @ W2.T + b2, torch.relu(X @ W1.T + b1) @ W2 + b2),
            "it equals the ReLU MLP with a transposed weight: W1 is (d_in, hidden) and W2 "
            "(hidden, n_classes), used as X @ W1 and h @ W2",
        ),
    ]
    for candidates, why in known:
        if any(judge.is_close(got, c, atol=1e-4, rtol=1e-5) for c in candidates):
            return why
    return "the logits must be relu(X @ W1 + b1) @ W2 + b2, a ReLU on the hidden layer only"


# ---------------------------------------------------------------- ch03.4 loss


@pytest.mark.task("ch03.4")
def test_cross_entropy_matches_pytorch():
    g = torch.Generator().manual_seed(2)
    logits = 3 * torch.randn(6, 6, generator=g)  # N == C: a softmax over the wrong axis runs
    targets = torch.randint(0, 6, (6,), generator=g)
    got = mm.cross_entropy(logits, targets)
    want = F.cross_entropy(logits, targets)
    assert isinstance(got, torch.Tensor) and got.dim() == 0, (
        f"cross_entropy returned {brief(got)}, expected a 0-d tensor (the batch mean)"
    )
    close_enough = judge.is_close(got, want, atol=1e-5, rtol=1e-5)
    assert close_enough, (
        f"cross_entropy(logits (6, 6), targets) = {got.item():.5f}, F.cross_entropy gives "
        f"{want.item():.5f}: normalise each row over the class axis (dim=1), pick the target's "
        "log-probability, negate, and average over the batch"
    )


@pytest.mark.task("ch03.4")
@pytest.mark.points(3)
def test_cross_entropy_is_stable_at_large_logits():
    logits = torch.tensor([[1000.0, -1000.0], [-1000.0, 1000.0], [1000.0, 1000.0], [0.0, 999.0]])
    targets = torch.tensor([0, 0, 1, 0])
    got = mm.cross_entropy(logits, targets)
    want = F.cross_entropy(logits, targets)
    finite = bool(torch.isfinite(got))
    assert finite, (
        f"cross_entropy on logits of +-1000 returned {got.item()}: exp(1000) overflows float32 "
        "to inf, and a probability that underflows to 0 gives log(0) = -inf; subtract each "
        "row's max before exp and stay in log space (log-sum-exp) to keep it stable"
    )
    close_enough = judge.is_close(got, want, atol=1e-8, rtol=1e-5)
    assert close_enough, (
        f"cross_entropy on logits of +-1000 returned {got.item():.3f}, F.cross_entropy {want.item():.3f}: "
        "the shift by the row max must be undone, log(sum(exp(z - m))) + m"
    )


@probe
def loss_and_gradient(logits, targets):
    """cross_entropy(logits, targets) and d loss / d logits (None when backward cannot reach
    the logits)."""
    logits = logits.detach().clone().requires_grad_()
    loss = mm.cross_entropy(logits, targets)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        loss.backward()
    return loss, logits.grad


@pytest.mark.task("ch03.4")
def test_cross_entropy_gradient_matches_pytorch():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(5, 3, generator=g)
    targets = torch.tensor([0, 2, 1, 1, 0])
    _, got = loss_and_gradient(logits, targets)
    assert got is not None, (
        "after cross_entropy(logits, targets).backward() logits.grad is None: the loss must be "
        "built from tensor operations on logits, not from .item() or numpy values"
    )
    leaf = logits.clone().requires_grad_()
    F.cross_entropy(leaf, targets).backward()
    close_enough = judge.is_close(got, leaf.grad, atol=1e-6, rtol=1e-5)
    assert close_enough, (
        "the gradient of cross_entropy w.r.t. the logits differs from F.cross_entropy's "
        f"(softmax - one_hot) / N: {first_difference(got, leaf.grad, atol=1e-6)}"
    )


class LibraryLossUsed(Exception):
    """Raised by the library losses while a probe checks that they are not used."""


LIBRARY_LOSSES = [  # (owner, attribute): what "by hand" replaces
    (torch.nn.functional, "cross_entropy"),
    (torch.nn.functional, "nll_loss"),
    (torch.nn.functional, "log_softmax"),
    (torch, "log_softmax"),
    (torch.special, "log_softmax"),
    (torch.Tensor, "log_softmax"),
    (torch._C._nn, "cross_entropy_loss"),
    (torch._C._nn, "nll_loss"),
]


def _refuse(name):
    def refused(*args, **kwargs):
        raise LibraryLossUsed(f"{name} was called")

    return refused


class LossCallRecorder(TorchFunctionMode):
    """Notes the name of every torch function called while it is active."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", ""))
        return func(*args, **(kwargs or {}))


@probe
def loss_without_library_losses(logits, targets):
    """cross_entropy(logits, targets) while F.cross_entropy, log_softmax and nll_loss (every
    spelling in LIBRARY_LOSSES) raise: the value, or the error; and which library loss
    functions were called anyway (names seen by a TorchFunctionMode, aliases included)."""
    saved = [(owner, attr, vars(owner).get(attr)) for owner, attr in LIBRARY_LOSSES]
    recorder = LossCallRecorder()
    try:
        for owner, attr, _ in saved:
            setattr(owner, attr, _refuse(f"{getattr(owner, '__name__', 'Tensor')}.{attr}"))
        with recorder:
            value = mm.cross_entropy(logits, targets)
        error = None
    except LibraryLossUsed as exc:
        value, error = None, str(exc)
    finally:
        for owner, attr, original in saved:
            if original is None:  # inherited (Tensor.log_softmax): drop the override
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)
    used = sorted(
        {n for n in recorder.names if "cross_entropy" in n or "log_softmax" in n or "nll" in n}
    )
    return value, error, used


@pytest.mark.task("ch03.4")
@pytest.mark.points(3)
def test_cross_entropy_is_written_by_hand():
    g = torch.Generator().manual_seed(4)
    logits = 4 * torch.randn(7, 5, generator=g)
    targets = torch.randint(0, 5, (7,), generator=g)
    value, error, used = loss_without_library_losses(logits, targets)
    from harness import source_rules  # the tests' side reads the submitted source itself

    rule = source_rules.NO_LIBRARY_LOSS
    written = source_rules.broken("ch03", "manual_mlp", "cross_entropy", rule)
    why = f"{written}: the task is to write it by hand, so {rule.hint}"
    assert written is None, why + ("" if error or used else source_rules.UNSEEN)
    assert error is None and not used, (
        f"cross_entropy computed its answer with PyTorch's own loss ({error or ', '.join(used)}): "
        "the task is to write it by hand — shift each row by its max, log-sum-exp over the "
        "class axis, subtract the target's logit, average (torch.logsumexp is allowed)"
    )
    close_enough = judge.is_close(value, F.cross_entropy(logits, targets), atol=1e-6, rtol=1e-5)
    assert close_enough, (
        "with the library losses unavailable, cross_entropy gave "
        f"{brief(value)}, F.cross_entropy gives {F.cross_entropy(logits, targets).item():.5f}"
    )


# ---------------------------------------------------------------- ch03.5 update


@probe
def one_sgd_step(values, grads, lr, frozen=()):
    """sgd_step on leaf tensors made from ``values``, each requiring grad unless its name is
    in ``frozen`` (frozen after its backward: it keeps the .grad it received), with .grad
    from ``grads`` (None: no gradient): afterwards, whether each entry is still the same
    tensor object, a leaf, whether it requires grad, its value and its .grad."""
    params = {k: v.clone().requires_grad_(k not in frozen) for k, v in values.items()}
    for k, g in grads.items():
        params[k].grad = None if g is None else g.clone()
    originals = dict(params)
    mm.sgd_step(params, lr)
    return {
        k: {
            "same_object": params.get(k) is originals[k],
            "is_leaf": getattr(params.get(k), "is_leaf", None),
            "requires_grad": getattr(params.get(k), "requires_grad", None),
            "value": originals[k].detach().clone(),
            "dict_value": params[k].detach().clone() if k in params else None,
            "grad": originals[k].grad,
        }
        for k in originals
    }


@pytest.mark.task("ch03.5")
@pytest.mark.points(2)
def test_sgd_step_updates_the_same_leaf_tensors_in_place():
    g = torch.Generator().manual_seed(4)
    values = {"W": torch.randn(3, 3, generator=g), "b": torch.zeros(3), "unused": torch.ones(2)}
    grads = {
        "W": torch.randn(3, 3, generator=g),
        "b": torch.tensor([1.0, -2.0, 0.5]),
        "unused": None,
    }
    with because(
        "sgd_step raised: update under torch.no_grad() (an in-place change to a leaf that "
        "requires grad is refused otherwise) and skip tensors whose .grad is None"
    ):
        after = one_sgd_step(values, grads, 0.1)
    for k, seen in after.items():
        assert seen["same_object"], (
            f"sgd_step replaced params[{k!r}] by a new tensor: update the existing one in place "
            "(p -= lr * p.grad under torch.no_grad()), or the next backward fills a tensor "
            "nobody updates"
        )
        assert seen["is_leaf"] and seen["requires_grad"], (
            f"after sgd_step params[{k!r}] is_leaf={seen['is_leaf']}, requires_grad="
            f"{seen['requires_grad']}: the update must not be recorded in the graph; do it "
            "under torch.no_grad()"
        )
        want = values[k] if grads[k] is None else values[k] - 0.1 * grads[k]
        close_enough = judge.is_close(seen["value"], want, atol=1e-6, rtol=1e-5)
        assert close_enough, (
            f"sgd_step(params, lr=0.1) moved params[{k!r}] wrongly "
            f"({first_difference(seen['value'], want, atol=1e-6)}): expected p - lr * p.grad "
            "(against the gradient), and no change where .grad is None"
        )
        kept = (
            seen["grad"] is None
            if grads[k] is None
            else isinstance(seen["grad"], torch.Tensor) and judge.is_equal(seen["grad"], grads[k])
        )
        assert kept, (
            f"sgd_step changed params[{k!r}].grad; leave it for step_report to read — the "
            "training loop clears it before the next backward"
        )


# ---------------------------------------------------------------- ch03.6 report


@probe
def hand_made_report():
    """step_report after a step made by hand: a healthy leaf, one the loss never reached and
    one whose gradient holds nan."""
    a = torch.zeros(2, 2).requires_grad_()
    unused = torch.ones(3).requires_grad_()
    bad = torch.zeros(2).requires_grad_()
    params = {"a": a, "unused": unused, "bad": bad}
    before = {k: v.detach().clone() for k, v in params.items()}
    a.grad = torch.tensor([[3.0, 0.0], [0.0, 4.0]])
    bad.grad = torch.tensor([float("nan"), 1.0])
    with torch.no_grad():
        a += torch.tensor([[0.1, -0.1], [0.1, -0.3]])  # largest single move 0.3, norm ~0.35
    return mm.step_report(before, params)


@probe
def books_first_step_report():
    """The chapter's broken (linear) network, one full-batch step at lr 0.5, then step_report."""
    Xtr, ytr, _, _ = book_data()
    params = book_params()
    F.cross_entropy(linear_mlp(params, Xtr), ytr).backward()
    before = {k: v.detach().clone() for k, v in params.items()}
    with torch.no_grad():
        for p in params.values():
            p -= 0.5 * p.grad
    return mm.step_report(before, params)


@pytest.mark.task("ch03.6")
@pytest.mark.points(2)
def test_step_report_on_a_hand_made_step():
    rows = hand_made_report()
    assert [r.name for r in rows] == ["a", "unused", "bad"], (
        f"step_report rows are named {[r.name for r in rows]}; expected one row per entry of params, in order"
    )
    ra, ru, rb = rows
    assert ra.is_leaf and not ra.grad_is_none and ra.finite, (
        f"row for a healthy leaf with a gradient: {ra}"
    )
    judge.number(
        ra.grad_norm,
        5.0,
        f"a.grad is [[3, 0], [0, 4]] but grad_norm = {ra.grad_norm}: the L2 norm is 5",
        abs=1e-12,
        rel=1e-5,
    )
    judge.number(
        ra.moved,
        0.3,
        f"a moved by [[0.1, -0.1], [0.1, -0.3]] but moved = {ra.moved:.4f}: moved is the largest "
        "absolute change of any single entry (0.3), not a norm or a mean of the change",
        abs=1e-6,
        rel=1e-6,
    )
    assert ru.grad_is_none and ru.grad_norm == 0.0 and ru.moved == 0.0, (
        f"a tensor the loss never reached has .grad None, grad_norm 0.0 and did not move; got {ru}"
    )
    assert not rb.finite, f"a tensor whose gradient holds nan must report finite=False; got {rb}"


@pytest.mark.task("ch03.6")
@pytest.mark.points(3)
def test_step_report_reproduces_the_books_first_step_table():
    rows = {r.name: r for r in books_first_step_report()}
    book = {
        "W1": (0.4516, 0.1048),
        "b1": (0.0192, 0.0053),
        "W2": (1.1058, 0.1918),
        "b2": (0.0175, 0.0062),
    }
    for name, (norm, moved) in book.items():
        r = rows[name]
        assert r.is_leaf and not r.grad_is_none and r.finite, f"row {name}: {r}"
        judge.number(
            r.grad_norm,
            norm,
            f"{name}: grad_norm {r.grad_norm:.4f}, the book's table says {norm}: the L2 norm of .grad",
            abs=1e-4,
            rel=1e-6,
        )
        judge.number(
            r.moved,
            moved,
            f"{name}: moved {r.moved:.4f}, the book's table says {moved}: the largest absolute "
            "change of any single entry",
            abs=1e-4,
            rel=1e-6,
        )


# ---------------------------------------------------------------- ch03.7 training


@probe
def trained(X_train, y_train, X_val, y_val, forward=None, **options):
    """train_mlp on the given split with FORWARDS[forward] (None: the module's default)."""
    data = mm.XorData(X_train, y_train, X_val, y_val)
    if forward is None:
        return mm.train_mlp(data, **options)
    return mm.train_mlp(data, forward=FORWARDS[forward], **options)


def gd_run(data, hidden, lr, steps, seed, forward=relu_mlp, clear=True):
    """Full-batch gradient descent from the recipe's parameters, here on the tests' side:
    (train losses, validation accuracies after each update). ``clear=False`` is the loop
    that never clears .grad."""
    Xtr, ytr, Xva, yva = data
    g = torch.Generator().manual_seed(seed)
    W1 = torch.randn(Xtr.shape[1], hidden, generator=g) / math.sqrt(Xtr.shape[1])
    W2 = torch.randn(hidden, 2, generator=g) / math.sqrt(hidden)
    params = {"W1": W1, "b1": torch.zeros(hidden), "W2": W2, "b2": torch.zeros(2)}
    params = {k: v.requires_grad_() for k, v in params.items()}
    losses, accs = [], []
    for _ in range(steps):
        if clear:
            for p in params.values():
                p.grad = None
        loss = F.cross_entropy(forward(params, Xtr), ytr)
        loss.backward()
        with torch.no_grad():
            for p in params.values():
                p -= lr * p.grad
        losses.append(loss.item())
        with torch.no_grad():
            accs.append((forward(params, Xva).argmax(1) == yva).float().mean().item())
    return losses, accs


def relied_on_problem(default_forward: bool) -> str | None:
    """Which function train_mlp calls gives a wrong answer here (None when all are right):
    init_mlp, mlp_forward (when it is the forward used), cross_entropy, sgd_step — each on a
    small case of its own, so a training run is never blamed for a piece it calls."""
    pieces = []
    book = book_params()
    drawn = initialised(2, 16, 2, 1)
    if not all(
        judge.is_close(drawn[k]["value"], book[k].detach(), atol=1e-6, rtol=1e-5) for k in book
    ):
        pieces.append("ch03.2 init_mlp (its parameters are not the recipe's)")
    g = torch.Generator().manual_seed(11)
    X = torch.randn(8, 2, generator=g)
    if default_forward:
        plain = {k: v.detach() for k, v in book.items()}
        if not judge.is_close(mm.mlp_forward(plain, X), relu_mlp(plain, X), atol=1e-4, rtol=1e-5):
            pieces.append("ch03.3 mlp_forward (the forward train_mlp uses by default)")
    logits, targets = 2 * torch.randn(6, 3, generator=g), torch.tensor([0, 2, 1, 1, 0, 2])
    loss, grad = loss_and_gradient(logits, targets)
    leaf = logits.clone().requires_grad_()
    F.cross_entropy(leaf, targets).backward()
    right_loss = judge.is_close(loss, F.cross_entropy(logits, targets), atol=1e-5, rtol=1e-5)
    if not (
        right_loss and grad is not None and judge.is_close(grad, leaf.grad, atol=1e-5, rtol=1e-5)
    ):
        pieces.append("ch03.4 cross_entropy (its loss or gradient)")
    values = {"W": torch.randn(2, 2, generator=g), "b": torch.randn(2, generator=g)}
    grads = {"W": torch.randn(2, 2, generator=g), "b": torch.randn(2, generator=g)}
    after = one_sgd_step(values, grads, 0.5)
    if not all(
        seen["same_object"]
        and judge.is_close(seen["value"], values[k] - 0.5 * grads[k], atol=1e-6, rtol=1e-5)
        for k, seen in after.items()
    ):
        pieces.append("ch03.5 sgd_step (its update)")
    if not pieces:
        return None
    return (
        f"train_mlp calls {', '.join(pieces)}, which is wrong on a small case of its own; "
        "the training run follows from it, so fix that task first (its own tests say how)"
    )


def history_problem(
    hist, data, hidden, lr, seed, forward=relu_mlp, steps=6, default_forward=False
) -> str | None:
    """Why ``hist`` does not start like full-batch gradient descent (None when it does):
    names a function train_mlp calls that is wrong, or else the first step that differs and
    the mechanism the evidence points at. ``default_forward``: train_mlp ran with its own
    default forward (mlp_forward)."""
    losses, accs = gd_run(data, hidden, lr, steps, seed, forward)
    got_losses, got_accs = list(hist.train_loss[:steps]), list(hist.val_acc[:steps])
    same = judge.is_number(got_losses, losses[: len(got_losses)], abs=1e-6, rel=1e-4)
    if not (same and judge.is_number(got_accs, accs[: len(got_accs)], abs=1e-6, rel=1e-6)):
        relied = relied_on_problem(default_forward)
        if relied:
            return relied
    for k in range(min(steps, len(got_losses))):
        if not judge.is_number(got_losses[k], losses[k], abs=1e-6, rel=1e-4):
            break
    else:
        if not judge.is_number(got_accs, accs[: len(got_accs)], abs=1e-6, rel=1e-6):
            shown = ", ".join(f"{a:.4f}" for a in got_accs[:3])
            wanted = ", ".join(f"{a:.4f}" for a in accs[:3])
            return (
                f"the losses match gradient descent but val_acc starts [{shown}], expected "
                f"[{wanted}]: val_acc[k] is the validation accuracy after update k"
            )
        return None
    if k == 0:
        return (
            f"the first loss is {got_losses[0]:.5f}, expected {losses[0]:.5f}: parameters come "
            "from init_mlp(d_in, hidden, n_classes, Generator().manual_seed(seed)) and "
            "train_loss[k] is cross_entropy(forward(params, X_train), y_train) before update k"
        )
    stale, _ = gd_run(data, hidden, lr, steps, seed, forward, clear=False)
    if judge.is_number(got_losses[: k + 1], stale[: k + 1], abs=1e-6, rel=1e-4):
        return (
            f"the first {k} step(s) match gradient descent, then step {k} follows the run that "
            "never clears .grad (loss "
            f"{got_losses[k]:.5f}, expected {losses[k]:.5f}): backward adds into .grad, so "
            "every update used the sum of all gradients so far; clear the gradients every step "
            "before backward"
        )
    return (
        f"the first {k} step(s) match gradient descent, step {k} does not (loss "
        f"{got_losses[k]:.5f}, expected {losses[k]:.5f}): look at the loop between steps — each "
        "step clears .grad, runs forward, loss and backward, then one sgd_step with this step's "
        "gradient alone"
    )


@pytest.mark.task("ch03.7")
@pytest.mark.points(2)
def test_train_mlp_starts_like_gradient_descent():
    data = book_data()
    hist = trained(*data, forward="relu", hidden=16, lr=0.5, steps=6, seed=1)
    assert len(hist.train_loss) == len(hist.val_acc) == 6, (
        f"train_mlp(steps=6) recorded {len(hist.train_loss)} losses and {len(hist.val_acc)} "
        "accuracies; expected one of each per step"
    )
    problem = history_problem(hist, data, hidden=16, lr=0.5, seed=1)
    assert problem is None, f"train_mlp on the book's data, lr 0.5, seed 1: {problem}"


@pytest.mark.task("ch03.7")
@pytest.mark.points(3)
def test_the_nonlinearity_is_what_learns_xor():
    data = book_data()
    Xva, yva = data[2], data[3]
    hist = trained(*data)  # the defaults are the book's recipe
    assert len(hist.train_loss) == len(hist.val_acc) == 500, (
        f"train_mlp(data) recorded {len(hist.train_loss)} losses and {len(hist.val_acc)} "
        "accuracies; expected one of each per step, 500 by default"
    )
    acc = hist.val_acc[-1]
    why = history_problem(hist, data, hidden=16, lr=0.5, seed=1, default_forward=True)
    assert acc >= 0.9, (
        f"train_mlp reached validation accuracy {acc:.4f} on XOR (the book: 0.995); "
        + (why or "a plateau near 0.59 means the hidden layer has no nonlinearity")
    )
    assert why is None, (
        "train_mlp(data) with its default arguments (hidden=16, lr=0.5, steps=500, seed=1: "
        f"the book's recipe) does not follow it: {why}"
    )
    scored = (relu_mlp(hist.params, Xva).argmax(1) == yva).float().mean().item()
    judge.number(
        scored,
        acc,
        f"the returned params score {scored:.4f} on the validation set but val_acc[-1] says "
        f"{acc:.4f}: the last entry describes the model after the last update",
        abs=1e-6,
        rel=1e-6,
    )
    judge.number(
        acc,
        0.995,
        f"validation accuracy {acc:.4f}, the book's recipe gives 0.995: full batch, lr 0.5, "
        "parameters from init_mlp with Generator().manual_seed(seed)",
        abs=1e-4,
        rel=1e-6,
    )
    linear = trained(*data, forward="linear")
    assert linear.val_acc[-1] < 0.7, (
        f"with the nonlinearity removed train_mlp still reached {linear.val_acc[-1]:.4f}; "
        "a linear model cannot separate XOR quadrants (the book: 0.5925) — use the given forward"
    )
    judge.number(
        linear.val_acc[-1],
        0.5925,
        f"without the nonlinearity: {linear.val_acc[-1]:.4f}, the book says 0.5925",
        abs=1e-4,
        rel=1e-6,
    )
