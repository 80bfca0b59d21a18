"""Hidden tests for ch02: other graphs, cuts, sizes and splits than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import os
import re
import warnings

import pytest
import torch
from torch import nn

from exercises.ch02.test_autograd import (  # helpers shared with the public twin
    full_batch_grad,
    marked_lines,
)
from harness.target import chapter_module

ag = chapter_module("ch02", "autograd")

HERE = os.path.basename(__file__)
X = torch.tensor([1.0, 2.0, 3.0, 4.0])
Y = 3.0 * X


def points_at(cut, line: int) -> bool:
    return HERE in cut.location and str(line) in re.findall(r"\d+", cut.location)


# ---------------------------------------------------------------- ch02.1 reachable_params


class BackwardSpy(torch.autograd.Function):
    """Identity in the forward pass; records it if a backward pass ever runs through it."""

    ran = False

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        BackwardSpy.ran = True
        return grad


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_runs_no_backward_pass():
    BackwardSpy.ran = False
    a = torch.tensor([1.0, -2.0], requires_grad=True)
    b = torch.tensor([0.5, 0.5], requires_grad=True)
    frozen = torch.tensor([3.0, 3.0])  # requires no grad: never reachable
    loss = (BackwardSpy.apply(a * b) + frozen).sum()
    got = ag.reachable_params(loss, {"a": a, "b": b, "frozen": frozen})
    assert got == {"a": True, "b": True, "frozen": False}, (
        "a tensor that does not require grad is never reachable; both factors of a product are"
    )
    assert not BackwardSpy.ran and a.grad is None and b.grad is None, (
        "reachability must be read from the graph's structure: no backward pass may run "
        "(not backward(), not torch.autograd.grad) and no .grad may change"
    )


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_matches_by_identity_not_value():
    p = torch.ones(2, 2, requires_grad=True)
    q = torch.ones(2, 2, requires_grad=True)  # same values, a different tensor
    r = torch.ones(2, 2, requires_grad=True)
    loss = (p @ q.detach() + r.data).sum()
    got = ag.reachable_params(loss, [("q", q), ("r", r), ("p", p)])
    assert got == {"q": False, "r": False, "p": True}, (
        "parameters must be matched by identity: tensors with equal values but no gradient "
        "path are not reachable"
    )
    assert list(got) == ["q", "r", "p"], "the result keeps the order of the names given"


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_through_a_very_deep_graph():
    w = torch.tensor(1.0, requires_grad=True)
    v = torch.tensor(1.0, requires_grad=True)
    h = w
    for _ in range(3000):
        h = h * 0.999 + 0.001
    loss = h + v.detach()
    got = ag.reachable_params(loss, [("w", w), ("v", v)])
    assert got == {"w": True, "v": False}, (
        "a parameter at the bottom of a graph thousands of operations deep is reachable: "
        "walk with an explicit stack or queue, not recursion bounded by Python's recursion limit"
    )


@pytest.mark.task("ch02.1")
def test_reachable_params_when_nothing_is_reachable():
    model = nn.Linear(3, 3)
    with torch.no_grad():
        loss = model(torch.randn(2, 3)).sum()
    got = ag.reachable_params(loss, model.named_parameters())
    assert got == {"weight": False, "bias": False}, (
        "a loss computed under no_grad has no graph (grad_fn is None): no parameter is reachable"
    )


@pytest.mark.task("ch02.1")
def test_reachable_params_through_shared_branches():
    torch.manual_seed(5)
    emb = nn.Embedding(6, 3)
    head = nn.Linear(3, 3)
    side = nn.Linear(3, 3)
    idx = torch.tensor([0, 2, 4])
    e = emb(idx)
    loss = (head(e) + head(e.tanh()) * side(e).data).mean()
    params = [(f"emb.{n}", p) for n, p in emb.named_parameters()]
    params += [(f"head.{n}", p) for n, p in head.named_parameters()]
    params += [(f"side.{n}", p) for n, p in side.named_parameters()]
    got = ag.reachable_params(loss, params)
    expected = {
        "emb.weight": True,
        "head.weight": True,
        "head.bias": True,
        "side.weight": False,
        "side.bias": False,
    }
    assert got == expected, (
        "parameters behind several levels of operations are reachable; a branch read through "
        ".data is not"
    )


# ---------------------------------------------------------------- ch02.2 find_graph_cuts


def leaving_torch(w):
    arr = w.detach().numpy()  # cut: detach
    back = torch.from_numpy(arr * 2.0)
    listed = torch.tensor(w.tolist())  # cut: tolist
    scalar = torch.tensor(float(w.sum()))  # cut: float
    copied = torch.tensor(w)  # cut: tensor
    return back + listed + scalar + copied


@pytest.mark.task("ch02.2")
@pytest.mark.points(2)
def test_find_graph_cuts_when_values_leave_torch():
    w = torch.arange(3.0).requires_grad_()
    with warnings.catch_warnings():  # torch itself warns about two of these cuts
        warnings.simplefilter("ignore", UserWarning)
        cuts = ag.find_graph_cuts(leaving_torch, w)
    lines = marked_lines(leaving_torch)
    ops = [c.op for c in cuts]
    assert len(cuts) == 4, (
        f"leaving torch and coming back cuts the path at each exit; found {len(cuts)} cuts {ops}, "
        "expected detach (before numpy), tolist, float and a torch.tensor copy — a result that is "
        "a Python number, list or numpy array is a cut too"
    )
    for cut, kind in zip(cuts, ["detach", "tolist", "float", "tensor"]):
        assert kind in cut.op and points_at(cut, lines[kind]), (
            f"cuts are reported in execution order, each naming its op and the user line; got {ops}"
        )


class LeakyHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x):
        h = self.proj(x)
        with torch.no_grad():
            scale = (x * h).norm()  # cut: mul
        return h / scale


@pytest.mark.task("ch02.2")
@pytest.mark.points(2)
def test_find_graph_cuts_points_into_user_code_inside_a_module():
    model = LeakyHead()
    cuts = ag.find_graph_cuts(lambda x: model(x).sum(), torch.randn(2, 3))
    line = marked_lines(LeakyHead.forward)["mul"]
    assert len(cuts) == 1 and "mul" in cuts[0].op, (
        "an op run under no_grad on a tensor that requires grad is a cut, also inside a module's "
        "forward and whichever argument (not only the first) carries the gradient; later ops on "
        f"its result are not cuts again; got {cuts}"
    )
    assert points_at(cuts[0], line), (
        "a cut's location is the user's file and line that ran the op, not a frame inside torch "
        f"(nn.Module.__call__) or inside the diagnostic; got {cuts[0].location!r}"
    )


def healthy_step(w, x, y):
    pred = x @ w
    loss = ((pred - y) ** 2).mean()
    best = pred.argmax(dim=1)
    correct = (best == y.argmax(dim=1)).float().mean()
    n = w.shape[0] + w.size(1)
    buf = w.new_zeros(w.shape) + torch.ones_like(w)
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad  # an update in place: w still requires grad afterwards
    return loss, correct, n, buf


@pytest.mark.task("ch02.2")
@pytest.mark.points(2)
def test_find_graph_cuts_is_silent_on_a_healthy_step():
    g = torch.Generator().manual_seed(9)
    w = torch.randn(5, 5, generator=g).requires_grad_()
    x, y = torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)
    cuts = ag.find_graph_cuts(healthy_step, w, x, y)
    assert cuts == [], (
        "integer and bool results (argmax, comparisons), shapes, shape-only constructors, reading "
        f".grad and an in-place update of a leaf under no_grad are not cuts; got {cuts}"
    )
    assert w.grad is not None, (
        "find_graph_cuts must run the function it is given, with its arguments"
    )


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_ignores_tensors_that_never_required_grad():
    def preprocess(x):
        with torch.no_grad():
            y = (x - x.mean()) / x.std()
        return y.detach().clone().numpy()

    cuts = ag.find_graph_cuts(preprocess, torch.randn(16))
    assert cuts == [], (
        "detach, no_grad and numpy on tensors that never required grad cut nothing: a cut needs "
        f"an input that required grad; got {cuts}"
    )


# ---------------------------------------------------------------- ch02.3 two_stage_train


def reference_two_stage(steps, lr, w1=0.5, w2=1.0):
    """Both gradients of mean((w2*w1*x - y)**2) written out, in float64 Python."""
    xs, ys = X.tolist(), Y.tolist()
    w1s, w2s, losses = [w1], [w2], []
    for _ in range(steps):
        r = [w2 * w1 * x - y for x, y in zip(xs, ys)]
        losses.append(sum(v * v for v in r) / len(r))
        g1 = sum(2 * v * w2 * x for v, x in zip(r, xs)) / len(r)
        g2 = sum(2 * v * w1 * x for v, x in zip(r, xs)) / len(r)
        w1, w2 = w1 - lr * g1, w2 - lr * g2
        w1s.append(w1)
        w2s.append(w2)
    return w1s, w2s, losses


@pytest.mark.task("ch02.3")
@pytest.mark.points(2)
def test_two_stage_follows_both_gradients():
    r = ag.two_stage_train(60, 0.01)
    w1s, w2s, losses = reference_two_stage(60, 0.01)
    off = [
        k
        for k in range(min(len(r.w1s), len(w1s)))
        if abs(r.w1s[k] - w1s[k]) > 1e-4 or abs(r.w2s[k] - w2s[k]) > 1e-4
    ]
    why = (
        "the gradient of the loss must reach w1 through the first stage"
        if not off or off[0] <= 1
        else f"the first {off[0] - 1} update(s) match, update {off[0]} does not: each update "
        "must use that step's gradient alone (clear .grad after every update, or it accumulates)"
    )
    assert r.w1s == pytest.approx(w1s, abs=1e-4) and r.w2s == pytest.approx(w2s, abs=1e-4), (
        f"w1 and w2 must follow gradient descent on both weights: {why}"
    )
    assert r.losses == pytest.approx(losses, rel=1e-4, abs=1e-6), (
        "losses[k] must be the loss of the prediction made by w1s[k], w2s[k]"
    )


@pytest.mark.task("ch02.3")
def test_two_stage_log_is_detached_and_complete():
    r = ag.two_stage_train(30, 0.03)
    assert len(r.features) == 30 and all(not f.requires_grad for f in r.features), (
        "the log holds one detached copy per step (a logged tensor that requires grad keeps its "
        "step's whole graph alive)"
    )
    for k in (0, 7, 29):
        assert torch.allclose(r.features[k], r.w1s[k] * X, atol=1e-5), (
            "features[k] must be the first stage's output at step k, w1s[k] * x"
        )
    assert r.w1s[-1] > 1.0, "w1 must learn when the first stage stays on the graph"


@pytest.mark.task("ch02.3")
def test_two_stage_zero_and_one_step():
    r = ag.two_stage_train(0, 0.02)
    assert r.losses == [] and r.features == [] and r.w1s == [0.5] and r.w2s == [1.0], (
        "zero steps record no loss and no features, and leave the starting weights 0.5 and 1.0"
    )
    r = ag.two_stage_train(1, 0.1)
    assert r.w1s == pytest.approx([0.5, 4.25]) and r.w2s == pytest.approx([1.0, 2.875]), (
        "one step from w1=0.5, w2=1.0 must move both weights against their own gradients (-37.5 for w1, -18.75 for w2)"
    )


# ---------------------------------------------------------------- ch02.4 accumulated_grad


def matches(got, want) -> bool:
    return all(
        n in got and torch.allclose(got[n], g, rtol=1e-5, atol=1e-6) for n, g in want.items()
    )


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_with_uneven_micro_batches():
    torch.manual_seed(11)
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3))
    g = torch.Generator().manual_seed(12)
    batch = (torch.randn(10, 3, generator=g), torch.randn(10, 3, generator=g))
    want = full_batch_grad(model, nn.functional.mse_loss, batch)
    got = ag.accumulated_grad(model, nn.functional.mse_loss, batch, 3)
    assert matches(got, want), (
        "with micro-batches of unequal size (10 examples in 3), each micro-batch's mean loss must "
        "be weighted by its share of the batch (size / total), not by 1/n_micro"
    )


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
@pytest.mark.parametrize("n_micro", [1, 6])
def test_accumulated_grad_at_the_extremes(n_micro):
    torch.manual_seed(13)
    model = nn.Linear(6, 6)
    g = torch.Generator().manual_seed(14)
    batch = (torch.randn(6, 6, generator=g), torch.randn(6, 6, generator=g))
    model(batch[0]).sum().backward()  # stale gradient left from elsewhere
    want = full_batch_grad(model, nn.functional.mse_loss, batch)
    got = ag.accumulated_grad(model, nn.functional.mse_loss, batch, n_micro)
    assert matches(got, want), (
        "one micro-batch (the whole batch) and one example per micro-batch must both give the "
        "full-batch gradient, whatever .grad held before the call"
    )


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_for_a_classifier_called_twice():
    torch.manual_seed(15)
    model = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 5))
    g = torch.Generator().manual_seed(16)
    batch = (torch.randn(20, 5, generator=g), torch.randint(0, 5, (20,), generator=g))
    want = full_batch_grad(model, nn.functional.cross_entropy, batch)
    first = ag.accumulated_grad(model, nn.functional.cross_entropy, batch, 5)
    second = ag.accumulated_grad(model, nn.functional.cross_entropy, batch, 5)
    assert matches(first, want) and matches(second, want), (
        "the accumulated cross-entropy gradient must equal the full-batch gradient, and calling "
        "again must not add onto the previous call's gradient (start from zero)"
    )
