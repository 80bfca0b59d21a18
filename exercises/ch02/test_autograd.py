"""Public tests for ch02 — run with `pytest exercises/ch02` (add `--impl solutions` to
see the reference pass).

Graphs, modules and callables never leave this process's student side: each `@probe`
below builds them, calls your function and returns what it observed; the test beside
it judges that observation."""

import inspect
import math
import os
import re
import signal
import threading
import warnings

import pytest
import torch
from torch import nn

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief
except ImportError:  # (probes never use it)
    pass

ag = chapter_module("ch02", "autograd")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "BackwardSpy CUT_CASES GRAPHS LOSSES WalkNeverEnded X Y as_container book_forward books_first_stage "
    "books_graph clean_forward constant_loss_graph cut_in_later_arguments cuts_in_places "
    "deep_chain_graph four_cuts layer_cut_graph leaf_loss_graph make_batch observe_reachability "
    "residual_graph small_model spied_graph training_step twins_graph"
)

HERE = os.path.basename(__file__)
X = torch.tensor([1.0, 2.0, 3.0, 4.0])
Y = 3.0 * X


def code_line(fn, code: str) -> int:
    """The line number, in its file, of the one line of ``fn`` that holds ``code``. The
    programs handed to find_graph_cuts carry no marks: where each cut is expected lives
    here, in the test bodies, on the tests' side."""
    lines, start = inspect.getsourcelines(fn)
    found = [start + i for i, line in enumerate(lines) if code in line]
    if len(found) != 1:
        raise LookupError(f"course bug: {code!r} is on {len(found)} lines of {fn.__name__}")
    return found[0]


def points_at(cut, line: int, here: str = HERE) -> bool:
    """Does ``cut.location`` name the file ``here`` and the line ``line``?"""
    location = str(cut.location)
    return here in location and str(line) in re.findall(r"\d+", location.rsplit(here, 1)[-1])


# ---------------------------------------------------------------- ch02.1 reachable_params


class BackwardSpy(torch.autograd.Function):
    """Identity in the forward pass. The k-th backward pass through it scales the gradient
    by k, counting on its own graph node: a backward pass that ran before the tests' own
    one shows in the gradients that one leaves, and those are compared on the tests' side
    with a fresh graph's (no flag in the student's reach to reset)."""

    @staticmethod
    def forward(ctx, x):
        ctx.passes = 0
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.passes += 1
        return grad * ctx.passes


def books_graph():
    """The book's loss: the first stage detached, so only w2 is behind the loss."""
    w1 = torch.tensor(0.5, requires_grad=True)
    w2 = torch.tensor(1.0, requires_grad=True)
    features = (w1 * X).detach()
    loss = ((w2 * features - Y) ** 2).mean()
    return loss, [("w1", w1), ("w2", w2)], "pairs"


def layer_cut_graph():
    """A two-layer model whose first layer's output is detached; model.named_parameters()."""
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3))
    x = torch.randn(5, 3)
    hidden = model[1](model[0](x)).detach()  # the first layer is cut off
    loss = model[2](hidden).pow(2).mean()
    return loss, list(model.named_parameters()), "generator"


def spied_graph():
    """A product behind a custom Function that notices any backward pass through it."""
    a = torch.tensor([1.0, -2.0], requires_grad=True)
    b = torch.tensor([0.5, 0.5], requires_grad=True)
    frozen = torch.tensor([3.0, 3.0])  # requires no grad: never reachable
    loss = (BackwardSpy.apply(a * b) + frozen).sum()
    return loss, [("a", a), ("b", b), ("frozen", frozen)], "dict"


def twins_graph():
    """Two parameters holding the same numbers; only one of them is on the loss's path."""
    p = torch.ones(2, 2, requires_grad=True)
    q = torch.ones(2, 2, requires_grad=True)  # same values, a different tensor
    r = torch.ones(1, requires_grad=True)
    s = torch.ones(1, requires_grad=True)  # a one-element twin of r
    loss = (BackwardSpy.apply(p @ q.detach()) * r).sum() + s.data.sum()
    return loss, [("q", q), ("s", s), ("p", p), ("r", r)], "pairs"


def deep_chain_graph():
    """3000 operations between the loss and w (an unrolled loop)."""
    w = torch.tensor(1.0, requires_grad=True)
    v = torch.tensor(1.0, requires_grad=True)
    h = w
    for _ in range(3000):
        h = h * 0.999 + 0.001
    return h + v.detach(), [("w", w), ("v", v)], "pairs"


def residual_graph():
    """60 residual blocks h = h + 0.5 * h: every node is reached by two paths, so the loss
    has 2**60 paths down to w, but only about 180 nodes."""
    w = torch.tensor(1.0, requires_grad=True)
    u = torch.tensor(2.0, requires_grad=True)
    h = w
    for _ in range(60):
        h = h + 0.5 * h
    return h * 1e-12 + u.detach(), [("u", u), ("w", w)], "pairs"


def leaf_loss_graph():
    """The 'loss' is itself a parameter (a leaf): no grad_fn, yet it reaches itself."""
    w = torch.tensor(2.0, requires_grad=True)
    v = torch.tensor(2.0, requires_grad=True)
    return w, [("w", w), ("v", v)], "pairs"


def constant_loss_graph():
    """A loss that is a plain constant: no graph at all."""
    w = torch.tensor(2.0, requires_grad=True)
    return torch.tensor(4.0), [("w", w)], "pairs"


GRAPHS = {
    "books": books_graph,
    "layer_cut": layer_cut_graph,
    "spied": spied_graph,
    "twins": twins_graph,
    "deep_chain": deep_chain_graph,
    "residual": residual_graph,
    "leaf_loss": leaf_loss_graph,
    "constant_loss": constant_loss_graph,
}


def as_container(pairs, kind):
    """The parameters the way a caller hands them over: pairs, a dict or a generator."""
    if kind == "dict":
        return dict(pairs)
    if kind == "generator":
        return (item for item in pairs)
    return list(pairs)


def observe_reachability(build):
    """reachable_params on the graph ``build()`` makes: its answer, the .grad it set,
    whether loss.backward() still works afterwards, and the .grad that backward left
    (judged against a fresh graph's: see ``earlier_backward``)."""
    loss, pairs, kind = build()
    got = ag.reachable_params(loss, as_container(pairs, kind))
    touched = [name for name, p in pairs if p.grad is not None]
    error = None
    if loss.requires_grad:
        try:
            loss.sum().backward()
        except RuntimeError as exc:
            error = str(exc).strip().splitlines()[0][:160]
    grads = {name: None if p.grad is None else p.grad.detach().clone() for name, p in pairs}
    return {"got": got, "touched": touched, "grads": grads, "backward_error": error}


@probe
def reachability(graph):
    """observe_reachability on one of GRAPHS."""
    return observe_reachability(GRAPHS[graph])


class WalkNeverEnded(Exception):
    """Raised into reachable_params when its walk has used up its CPU-time budget."""


@probe
def reachability_within(graph, cpu_seconds):
    """observe_reachability on one of GRAPHS, interrupted by ``WalkNeverEnded`` once the
    process has spent ``cpu_seconds`` of CPU time in it (a CPU-time timer, so a busy machine
    does not trip it; where no such timer exists the call simply runs)."""
    timer = getattr(signal, "ITIMER_PROF", None)
    if timer is None or threading.current_thread() is not threading.main_thread():
        return observe_reachability(GRAPHS[graph])

    def interrupt(signum, frame):
        raise WalkNeverEnded(f"still walking after {cpu_seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, interrupt)
    signal.setitimer(timer, cpu_seconds)
    try:
        return observe_reachability(GRAPHS[graph])
    finally:
        signal.setitimer(timer, 0)
        signal.signal(signal.SIGPROF, previous)


def fresh_grads(build) -> dict:
    """The .grad one backward pass through a fresh graph leaves, here on the tests' side."""
    loss, pairs, _ = build()
    if loss.requires_grad:
        loss.sum().backward()
    return {name: p.grad for name, p in pairs}


def backward_truth(build) -> dict[str, bool]:
    """Which parameters a real backward pass fills."""
    return {name: grad is not None for name, grad in fresh_grads(build).items()}


def earlier_backward(seen, build) -> bool:
    """Did a backward pass run through the graph during reachable_params? The tests' own
    backward after it then leaves other gradients than on a fresh graph (BackwardSpy
    scales its k-th pass by k)."""
    if seen["backward_error"] is not None:
        return False  # the graph was spent: reported on its own
    want, got = fresh_grads(build), seen["grads"]
    if not isinstance(got, dict) or set(got) != set(want):
        return True
    for name, w in want.items():
        g = got[name]
        if (g is None) != (w is None):
            return True
        if w is not None and not judge.is_close(g, w, atol=1e-7, rtol=1e-6):
            return True
    return False


def depths_below_the_loss(build) -> dict[str, int]:
    """How many backward nodes below the loss each parameter's AccumulateGrad lies (1: in
    loss.grad_fn.next_functions; 0: the loss is that parameter); unreached ones are absent."""
    loss, pairs, _ = build()
    found = {id(loss): 0} if loss.grad_fn is None and loss.requires_grad else {}
    level, seen, depth = [loss.grad_fn] if loss.grad_fn is not None else [], set(), 0
    while level:
        depth += 1
        below = []
        for node in level:
            for child, _ in node.next_functions:
                if child is None or child in seen:
                    continue
                seen.add(child)
                if hasattr(child, "variable"):
                    found.setdefault(id(child.variable), depth)
                below.append(child)
        level = below
    return {name: found[id(p)] for name, p in pairs if id(p) in found}


NEAR = 10  # a miss further down may be a walk cut short (a recursion limit): not blamed here


def one_level_only(build, got, want) -> str | None:
    """Where ``got`` is exactly the answer of a walk that stops at the loss's own inputs and
    misses only parameters a few nodes further down: what was missed, and how deep each lies."""
    depth = depths_below_the_loss(build)
    shallow = {name: depth.get(name) == 1 for name in want}
    missed = [name for name in want if want[name] and not shallow[name]]
    if got != shallow or not missed or any(not 2 <= depth[name] <= NEAR for name in missed):
        return None
    far = ", ".join(f"{name} ({depth[name]} backward nodes below the loss)" for name in missed)
    said = (
        "only the parameters directly below the loss were reported reachable, but a backward "
        "pass also reaches"
        if any(shallow.values())
        else "no parameter was reported reachable, but a backward pass reaches"
    )
    return (
        f"{said} {far}. A walk that reads only "
        "loss.grad_fn.next_functions gives exactly this answer: walk every node's "
        "next_functions, level after level, not only the loss's"
    )


def judge_reachability(label: str, seen, want, why: str, build=None):
    """``seen`` against ``want``; ``build`` (the graph's builder), where given, lets a walk
    that stopped one level below the loss be told so."""
    got = seen["got"]
    assert isinstance(got, dict) and list(got) == list(want), (
        f"reachable_params on the {label} graph returned {brief(got)}; expected a dict with the "
        f"names given, in the order given ({list(want)})"
    )
    shallow = None if got == want or build is None else one_level_only(build, got, want)
    assert shallow is None, (
        f"reachable_params on the {label} graph returned {got}, expected {want}: {shallow}"
    )
    assert got == want, (
        f"reachable_params on the {label} graph returned {got}, expected {want}: {why}"
    )


def check_reachability(graph, why: str):
    seen = reachability(graph)
    judge_reachability(graph, seen, backward_truth(GRAPHS[graph]), why, GRAPHS[graph])
    seen["backward_ran"] = earlier_backward(seen, GRAPHS[graph])
    return seen


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_on_the_books_graph():
    check_reachability(
        "books",
        "follow loss.grad_fn.next_functions down to the AccumulateGrad nodes; their .variable "
        "is the leaf a gradient would reach, and the detached w1 is not among them",
    )


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_leaves_the_graph_untouched():
    seen = check_reachability(
        "layer_cut",
        "the first layer's output was detached, so only the last layer's parameters are "
        "reachable (named_parameters() is a generator: read it once)",
    )
    assert not seen["touched"], (
        f"after reachable_params, .grad is set on {seen['touched']}: the walk must only read "
        "grad_fn.next_functions, never run backward"
    )
    assert seen["backward_error"] is None, (
        f"loss.backward() after reachable_params raised {seen['backward_error']!r}: the graph "
        "was consumed; reading the graph must not call backward"
    )


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_runs_no_backward_pass():
    seen = check_reachability(
        "spied",
        "both factors of a product are reachable; a tensor that does not require grad never is",
    )
    assert not seen["backward_ran"] and not seen["touched"], (
        "a backward pass ran through the graph during reachable_params (or .grad changed on "
        f"{seen['touched']}): reachability is read from the graph's structure, not with "
        "backward() or torch.autograd.grad"
    )


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
def test_reachable_params_matches_by_identity():
    with because(
        "reachable_params raised on parameters with equal values: compare leaves by identity "
        "(id(t) or `is`), never with == (elementwise on tensors)"
    ):
        check_reachability(
            "twins",
            "parameters are matched by identity: a tensor holding the same numbers as a "
            "reachable one, but used only through detach() or .data, is not reachable",
        )


@pytest.mark.task("ch02.1")
@pytest.mark.points(2)
@pytest.mark.timeout(10)
def test_reachable_params_on_deep_and_residual_graphs():
    with because(
        "reachable_params raised on a graph 3000 operations deep: walk with an explicit "
        "stack or queue, not recursion bounded by Python's recursion limit"
    ):
        check_reachability(
            "deep_chain", "a parameter at the bottom of a long chain of operations is reachable"
        )
    with because(
        "reachable_params did not finish on 60 residual blocks (h = h + 0.5 * h: about 180 "
        "nodes, but every node is reached by two paths, so 2**60 paths lead from the loss to w). "
        "A graph walk that never ends usually visits shared nodes again for every path that "
        "reaches them: remember the nodes you have visited and walk each once"
    ):
        seen = reachability_within("residual", 1.0)
    judge_reachability(
        "residual",
        seen,
        backward_truth(GRAPHS["residual"]),
        "every residual block reaches the node below it by two paths; remember the nodes you "
        "have visited and visit each once",
    )


@pytest.mark.task("ch02.1")
def test_reachable_params_when_the_loss_is_a_leaf():
    with because(
        "reachable_params raised on a loss without grad_fn: a leaf (or a constant) has "
        "loss.grad_fn None; handle it before walking next_functions"
    ):
        check_reachability(
            "leaf_loss",
            "a loss that is itself a parameter has no grad_fn, but a gradient reaches that "
            "parameter (d loss / d loss = 1): only it is reachable",
        )
        check_reachability("constant_loss", "a constant has no graph: nothing is reachable")


# ---------------------------------------------------------------- ch02.2 find_graph_cuts


def book_forward(w1, w2):
    features = (w1 * X).detach()
    return ((w2 * features - Y) ** 2).mean()


def four_cuts(w):
    a = w.detach() * 2
    b = w.data + 1
    with torch.no_grad():
        c = w * 3
    d = torch.tensor(w.sum().item())
    return a + b + c + d


def clean_forward(w, x):
    h = torch.relu(x @ w)
    scale = torch.zeros_like(h) + 2.0
    mask = h > 0.1
    noise = x * 0.5  # plain data: nothing here ever required grad
    return (h * scale * mask).sum() + noise.sum()


def training_step(w, x):
    """A healthy step: nothing in it cuts a gradient path."""
    pred = x @ w
    best = pred.argmax(dim=1)  # integers
    top, where = pred.max(dim=1)  # top stays on the graph, where is integers
    size = w.shape[0] * w.size(1)
    buf = w.new_zeros(w.shape) + torch.ones_like(w)
    loss = (pred**2).mean() + top.sum() * 0.0 + buf.sum() * 0.0
    loss.backward()
    g = w.grad  # reading .grad
    with torch.no_grad():
        w -= 0.1 * g  # an update in place: w still requires grad afterwards
    return loss, best, where, size


def cuts_in_places():
    """Cuts whose tensor is not the first argument: a later one, a keyword, a list's item."""
    w = torch.ones(3, requires_grad=True)
    x = torch.zeros(3)
    return cut_in_later_arguments, (w, x)


def cut_in_later_arguments(w, x):
    with torch.no_grad():
        a = x * w
        b = torch.add(x, other=w)
        c = torch.stack([x, w])
    return a + b + c.sum(0)


CUT_CASES = {
    "book": lambda: (
        book_forward,
        (torch.tensor(0.5, requires_grad=True), torch.tensor(1.0, requires_grad=True)),
    ),
    "four": lambda: (four_cuts, (torch.ones(3, requires_grad=True),)),
    "clean": lambda: (
        clean_forward,
        (torch.randn(4, 4, requires_grad=True), torch.randn(3, 4)),
    ),
    "step": lambda: (
        training_step,
        (torch.randn(4, 4).requires_grad_(), torch.randn(5, 4)),
    ),
    "places": cuts_in_places,
}


@probe
def cuts(case):
    """find_graph_cuts on one of CUT_CASES: the cuts it returned, and for each argument
    whether its .grad was filled afterwards (the function really ran)."""
    torch.manual_seed(0)
    fn, args = CUT_CASES[case]()
    with warnings.catch_warnings():  # torch itself warns about some of these cuts
        warnings.simplefilter("ignore", UserWarning)
        found = ag.find_graph_cuts(fn, *args)
    return found, [isinstance(a, torch.Tensor) and a.grad is not None for a in args]


def describe(found) -> str:
    return "[" + ", ".join(f"({c.op!r}, {c.location!r})" for c in found) + "]"


def cut_list(found, call: str):
    """``found`` once shown to be find_graph_cuts's kind of answer: a list whose items each
    carry an ``op`` and a ``location`` (so an empty tensor, or a list of NaN, never reads as
    "no cut found")."""
    assert type(found) is list, (
        f"{call} returned {brief(found)}, expected a list of Cut(op, location)"
    )
    for cut in found:
        assert hasattr(cut, "op") and hasattr(cut, "location"), (
            f"{call} returned the item {brief(cut)}: each cut is a Cut(op, location)"
        )
    return found


def check_cuts(found, fn, expected, why: str):
    """``found`` names the kinds of ``expected`` ((kind, a piece of code) pairs) in order,
    each at the line of ``fn`` that holds its piece of code."""
    cut_list(found, f"find_graph_cuts({fn.__name__}, ...)")
    kinds = [kind for kind, _ in expected]
    lines = {kind: code_line(fn, code) for kind, code in expected}
    ops = [str(c.op) for c in found]
    assert len(found) == len(kinds), (
        f"find_graph_cuts({fn.__name__}, ...) found {len(found)} cuts {ops}; expected "
        f"{len(kinds)} ({', '.join(kinds)}): {why}"
    )
    for cut, kind in zip(found, kinds):
        assert kind in str(cut.op), (
            f"find_graph_cuts({fn.__name__}, ...) reported ops {ops}; expected ops naming "
            f"{', '.join(kinds)}, in the order they ran"
        )
        assert points_at(cut, lines[kind]), (
            f"the {kind} cut's location is {cut.location!r}; it should point at the user's line "
            f"{HERE}:{lines[kind]}, the first stack frame outside torch and outside your module"
        )


def check_books_detach(found):
    check_cuts(
        found,
        book_forward,
        [("detach", "(w1 * X).detach()")],
        "record every torch call (a TorchFunctionMode) and keep those whose input required "
        "grad while the output does not",
    )


@pytest.mark.task("ch02.2")
@pytest.mark.points(2)
def test_find_graph_cuts_finds_the_books_detach():
    found, _ = cuts("book")
    check_books_detach(found)


@pytest.mark.task("ch02.2")
@pytest.mark.points(3)
def test_find_graph_cuts_reports_each_kind_in_order():
    found, _ = cuts("four")
    check_cuts(
        found,
        four_cuts,
        [("detach", "w.detach()"), ("data", "w.data"), ("mul", "w * 3"), ("item", ".item()")],
        "detach, .data, a multiplication under no_grad, and .item() re-wrapped: an op under "
        "no_grad and an .item() are cuts too, because their input required grad and their "
        "result (a tensor, or a Python number) does not",
    )


@pytest.mark.task("ch02.2")
@pytest.mark.points(2)
def test_find_graph_cuts_looks_at_every_argument():
    found, _ = cuts("places")
    check_cuts(
        found,
        cut_in_later_arguments,
        [("mul", "x * w"), ("add", "torch.add("), ("stack", "torch.stack(")],
        "the tensor that requires grad may be any argument: a later one (x * w), a keyword "
        "(other=w) or an item of a list (torch.stack([x, w])); flatten args and kwargs",
    )


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_is_silent_on_a_clean_function():
    found, _ = cuts("clean")
    cut_list(found, "find_graph_cuts(clean_forward, ...)")
    assert found == [], (
        f"find_graph_cuts on a function whose gradient path is intact reported {describe(found)}: "
        "a cut needs an input that required grad; bool results and zeros_like only read shapes"
    )
    book, _ = cuts("book")  # silence counts beside a diagnosis that speaks where it must
    check_books_detach(book)


@pytest.mark.task("ch02.2")
@pytest.mark.points(2)
def test_find_graph_cuts_is_silent_on_a_healthy_training_step():
    found, filled = cuts("step")
    cut_list(found, "find_graph_cuts(training_step, ...)")
    assert found == [], (
        f"find_graph_cuts on a healthy training step reported {describe(found)}: integer results "
        "(argmax, the indices of max), shapes, shape-only constructors (new_zeros, ones_like), "
        "reading .grad and an in-place update of a leaf under no_grad are not cuts; a call "
        "with several outputs cuts nothing while one of them stays on the graph"
    )
    assert filled[0], "find_graph_cuts must run the function it is given, with its arguments"
    book, _ = cuts("book")  # silence counts beside a diagnosis that speaks where it must
    check_books_detach(book)


# ---------------------------------------------------------------- ch02.3 two_stage_train


def books_first_stage(w1, x, log):
    features = (w1 * x).detach()
    log.append(features)
    return features


@probe
def books_run(steps, lr):
    """run_two_stage with the book's (detaching) first stage."""
    return ag.run_two_stage(books_first_stage, steps, lr)


@probe
def first_stage_once(w1_value, x):
    """first_stage(w1, x, log) on a fresh w1: its output, the log, and w1's gradient after
    backward from the output's sum (None if no gradient reached it)."""
    w1 = torch.tensor(w1_value, requires_grad=True)
    log = []
    out = ag.first_stage(w1, x, log)
    logged = [(t.requires_grad, t.detach().clone()) for t in log]
    reached = None
    if isinstance(out, torch.Tensor) and out.requires_grad:
        out.sum().backward()
        reached = None if w1.grad is None else w1.grad.item()
    requires = out.requires_grad if isinstance(out, torch.Tensor) else None
    return {"out": out, "requires_grad": requires, "log": logged, "grad": reached}


BOOK_TABLE = {0: (46.875000, 1.3750), 9: (11.521060, 3.7071), 99: (0.000009, 5.9979)}


def plain_float(value, what: str) -> float:
    """``value`` once shown to be what TwoStageResult's fields hold: a finite Python float
    (the tests compute with it, so a NaN or a float subclass never gets that far)."""
    assert type(value) is float and math.isfinite(value), (
        f"{what} is {brief(value)}, expected a finite Python float (tensor.item())"
    )
    return value


@pytest.mark.task("ch02.3")
@pytest.mark.points(2)
def test_the_books_table_and_the_repair():
    book = books_run(400, 0.02)
    for step, (loss, w2) in BOOK_TABLE.items():
        judge.number(  # a few float32 ulps: p.add_(g, alpha=-lr) rounds unlike p -= lr * g
            book.losses[step], loss, f"the book's run: step {step} loss, from the table", abs=5e-6
        )
        judge.number(
            book.w2s[step + 1],
            w2,
            f"the book's run: w2 after step {step}, from the table",
            abs=5e-5,
        )
    judge.number(book.w2s[400], 6.0, "the book's run should end with w2 6.0000", abs=5e-5)
    judge.number(book.w1s, [0.5] * 401, "the book's run keeps w1 frozen at 0.5 throughout")
    fixed = ag.two_stage_train(400, 0.02)
    moved = plain_float(fixed.w1s[1], "two_stage_train(400, 0.02).w1s[1]")
    assert moved != 0.5, (
        f"two_stage_train(400, 0.02) still reproduces the book's table: w1 stays at {fixed.w1s[-1]} "
        f"and w2 ends at {fixed.w2s[-1]:.4f} alone. The first stage's output is detached, so no "
        "gradient path leads back to w1; log a detached copy, but return the graph-connected tensor"
    )


@pytest.mark.task("ch02.3")
@pytest.mark.points(2)
def test_repaired_two_stage_moves_both_weights():
    r = ag.two_stage_train(400, 0.02)
    judge.number(
        r.w1s[1],
        1.25,
        "after step 0, w1 (w1s[1]); with both stages connected its gradient is "
        "mean(2*(w2*w1*x - y)*w2*x) = -37.5, so w1 should be 0.5 + 0.02*37.5 = 1.25"
        + (
            ": w1 never moved, the first stage's output is still cut off"
            if judge.is_number(r.w1s[1], 0.5)
            else ""
        ),
        abs=1e-5,
    )
    w1 = plain_float(r.w1, "two_stage_train(400, 0.02).w1")
    w2 = plain_float(r.w2, "two_stage_train(400, 0.02).w2")
    learned = "expected w1*w2 -> 3 and a loss near 0 (below 1e-9) when both weights learn"
    judge.number(w1 * w2, 3.0, f"after 400 steps w1*w2; {learned}", abs=1e-4)
    judge.number(r.losses[-1], 0.0, f"after 400 steps the loss; {learned}", abs=1e-9)
    judge.number(
        (w1, w2),
        (1.6931, 1.7719),
        "after 400 steps (w1, w2); the measured run ends at w1 1.6931, w2 1.7719",
        abs=2e-4,
    )


@pytest.mark.task("ch02.3")
def test_feature_log_holds_each_steps_features():
    r = ag.two_stage_train(5, 0.02)
    assert type(r.features) is list and len(r.features) == 5, (
        f"5 steps should log 5 feature tensors, got {brief(r.features)}"
    )
    for k, f in enumerate(r.features):
        w1 = plain_float(r.w1s[k], f"two_stage_train(5, 0.02).w1s[{k}]")
        judge.close(
            f,
            w1 * X,
            f"features[{k}], expected w1s[{k}] * X: log the first stage's output of every step",
            atol=1e-5,
            rtol=1e-5,
        )
        assert not f.requires_grad, (
            f"features[{k}] requires grad: the log should hold a detached copy, or every step's "
            "graph stays alive in memory"
        )
    judge.number(
        r.features[1][0].item(),
        1.25,
        f"features[1] = {r.features[1].tolist()}: w1 never moved, so the first stage keeps producing "
        "0.5*x; the returned features must stay on the graph (detach only the logged copy)",
        abs=1e-5,
    )


@pytest.mark.task("ch02.3")
@pytest.mark.points(2)
def test_first_stage_returns_a_connected_output_and_logs_a_copy():
    seen = first_stage_once(0.5, X)
    assert seen["requires_grad"] and seen["grad"] is not None, (
        "first_stage(w1, x, log) returned a tensor with no gradient path back to w1 "
        f"(requires_grad={seen['requires_grad']}): detaching (or .data, or re-wrapping) the "
        "output cuts the graph; detach only the copy that goes into the log"
    )
    judge.number(
        seen["grad"],
        float(X.sum()),
        "d sum(first_stage(w1, x)) / d w1, expected sum(x): the output is w1 * x, connected to "
        "w1 itself (a re-wrapped copy is a new leaf)",
        rel=1e-5,
    )
    judge.close(
        seen["out"], 0.5 * X, "first_stage(0.5, x) should return w1 * x", atol=1e-8, rtol=1e-5
    )
    assert len(seen["log"]) == 1, (
        f"one call should log one tensor, the log holds {len(seen['log'])}"
    )
    grad_flag, logged = seen["log"][0]
    logged_copy = (
        f"the log holds {brief(logged)} (requires_grad={grad_flag}); expected a detached copy "
        "of w1 * x, which keeps no graph alive"
    )
    assert not grad_flag, logged_copy
    judge.close(logged, 0.5 * X, logged_copy, atol=1e-8, rtol=1e-5)


# ---------------------------------------------------------------- ch02.4 accumulated_grad


LOSSES = {"mse": nn.functional.mse_loss, "cross_entropy": nn.functional.cross_entropy}


def small_model(seed: int, width: int = 4, kind: str = "tanh", dtype: str = "float32") -> nn.Module:
    torch.manual_seed(seed)
    if kind == "linear":
        return nn.Linear(width, width).to(getattr(torch, dtype))
    act = nn.ReLU() if kind == "relu" else nn.Tanh()
    model = nn.Sequential(nn.Linear(width, width), act, nn.Linear(width, width))
    return model.to(getattr(torch, dtype))


def make_batch(n: int, width: int, seed: int, loss: str = "mse", dtype: str = "float32"):
    g, dt = torch.Generator().manual_seed(seed), getattr(torch, dtype)
    inputs = torch.randn(n, width, generator=g, dtype=dt)
    if loss == "cross_entropy":
        return inputs, torch.randint(0, width, (n,), generator=g)
    return inputs, torch.randn(n, width, generator=g, dtype=dt)


@probe
def accumulate(
    model_seed,
    n,
    n_micro,
    data_seed,
    width=4,
    kind="tanh",
    loss="mse",
    stale=False,
    calls=1,
    dtype="float32",
):
    """accumulated_grad on a fresh model (after a stale backward if ``stale``), ``calls``
    times: what each call returned, the .grad it left, the batch sizes the model saw (and
    the inputs of each of those batches), which
    returned entries changed when .grad was changed afterwards (not copies), which
    parameters' values changed, and whether the batch's inputs or targets changed."""
    model = small_model(model_seed, width, kind, dtype)
    batch = make_batch(n, width, data_seed, loss, dtype)
    if stale:
        model(batch[0] * 5).pow(2).mean().backward()  # an earlier step's gradient
    values = {name: p.detach().clone() for name, p in model.named_parameters()}
    batch_before = [t.clone() for t in batch]
    sizes, pieces = [], []

    def watch(module, args):
        sizes.append(len(args[0]))
        pieces.append(args[0].detach().clone())

    model.register_forward_pre_hook(watch)
    results = [ag.accumulated_grad(model, LOSSES[loss], batch, n_micro) for _ in range(calls)]
    grads = {
        name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()
    }
    moved = sorted(
        n for n, p in model.named_parameters() if not judge.is_equal(p.detach(), values[n])
    )
    batch_changed = any(not judge.is_equal(a, b) for a, b in zip(batch, batch_before))
    last = results[-1]
    snapshot = {k: v.clone() for k, v in last.items() if isinstance(v, torch.Tensor)}
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.grad.add_(1.0)
    aliased = sorted(k for k, v in snapshot.items() if not judge.is_equal(last[k], v))
    return {
        "results": results,
        "grads": grads,
        "sizes": sizes,
        "pieces": pieces,
        "aliased": aliased,
        "moved": moved,
        "batch_changed": batch_changed,
    }


def full_batch_grad(model_seed, n, data_seed, width=4, kind="tanh", loss="mse", dtype="float32"):
    """The full-batch gradient, computed here from the same model and batch."""
    model = small_model(model_seed, width, kind, dtype)
    inputs, targets = make_batch(n, width, data_seed, loss, dtype)
    LOSSES[loss](model(inputs), targets).backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}


def wrong_accumulations(
    model_seed,
    n,
    n_micro,
    data_seed,
    width=4,
    kind="tanh",
    loss="mse",
    stale=False,
    dtype="float32",
):
    """What the usual mistakes give on the same case: {mechanism: gradient}."""
    model = small_model(model_seed, width, kind, dtype)
    inputs, targets = make_batch(n, width, data_seed, loss, dtype)
    chunks = [
        (a, b)
        for a, b in zip(torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro))
        if len(a)
    ]
    stale_grad = {}
    if stale:
        model(inputs * 5).pow(2).mean().backward()
        stale_grad = {k: p.grad.clone() for k, p in model.named_parameters()}

    def run(weights, keep_stale=False, only_last=False):
        model.zero_grad(set_to_none=True)
        for k, ((a, b), w) in enumerate(zip(chunks, weights)):
            if only_last and k < len(chunks) - 1:
                continue
            (LOSSES[loss](model(a), b) * w).backward()
        out = {k: p.grad.clone() for k, p in model.named_parameters()}
        if keep_stale:
            out = {k: v + stale_grad[k] for k, v in out.items()}
        return out

    shares = [len(a) / n for a, _ in chunks]
    found = {
        "each micro-batch's mean loss was backpropagated unscaled, so the gradient is "
        "n_micro times too large: scale each by its share of the batch": run([1.0] * len(chunks)),
        "every micro-batch was weighted 1/n_micro, which is right only when all chunks have "
        "the same size: weight each by its share of the batch, len(chunk) / len(batch)": run(
            [1.0 / n_micro] * len(chunks)
        ),
        "only the last micro-batch's gradient survived: the gradients were cleared inside the "
        "loop, so earlier micro-batches were lost; zero once, before accumulating": run(
            shares, only_last=True
        ),
    }
    if stale:
        found[
            "the gradient left in .grad by an earlier backward was added in (stale gradients): "
            "zero the gradients once before accumulating"
        ] = run(shares, keep_stale=True)
    return found


def close(got, want) -> bool:
    return isinstance(got, dict) and all(
        judge.is_close(got.get(k), v, atol=1e-6, rtol=1e-5) for k, v in want.items()
    )


def check_real(call: str, seen, *case, **options):
    """Every call returned real gradients: a dict with one tensor per parameter, each of
    the parameter's shape, finite and bounded (their values are other tests' business)."""
    model_seed, n, n_micro, data_seed = case
    keep = {k: v for k, v in options.items() if k in ("width", "kind", "loss", "dtype")}
    want = full_batch_grad(model_seed, n, data_seed, **keep)
    for got in seen["results"]:
        assert type(got) is dict and sorted(got) == sorted(want), (
            f"{call} returned {brief(got)}: a dict of one gradient per parameter, {sorted(want)}"
        )
        for name, w in want.items():
            judge.answer(got[name], tuple(w.shape), f"{call}: the gradient of {name}")


def check_returned(call: str, seen, *case, **options):
    """Every call's returned gradients equal the full-batch gradient (computed here);
    returns that gradient."""
    model_seed, n, n_micro, data_seed = case
    keep = {k: v for k, v in options.items() if k in ("width", "kind", "loss", "dtype")}
    want = full_batch_grad(model_seed, n, data_seed, **keep)
    for k, got in enumerate(seen["results"]):
        if close(got, want):
            continue
        missing = [name for name in want if not isinstance(got, dict) or name not in got]
        assert not missing, f"{call} returned no gradient for {missing}"
        named = next(
            (
                why
                for why, grad in wrong_accumulations(*case, **options).items()
                if close(got, grad)
            ),
            None,
        )
        if named is None and seen["aliased"]:
            named = (
                f"changing .grad after accumulated_grad returned also changed the returned "
                f"{seen['aliased']}: return copies (p.grad.clone()), not the .grad tensors themselves"
            )
        if named is None and k > 0:
            named = (
                "the first call was right: a later call must start from zero, not add onto "
                "what the previous call left in .grad"
            )
        name = next(name for name in want if not close({name: got[name]}, {name: want[name]}))
        problem = judge.mismatch(got[name], want[name], atol=1e-6, rtol=1e-5)
        g, w = got[name], want[name]
        if named is None and type(g) is torch.Tensor and g.dtype != w.dtype:
            named = (
                f"the returned gradient of {name} is {g.dtype} for a {w.dtype} model: a copy of "
                ".grad keeps its dtype and device (p.grad.clone()); converting it (.float(), "
                ".cpu(), torch.tensor(...)) or starting a sum from torch.zeros(p.shape) does not"
            )
        if type(g) is torch.Tensor and (g.shape, g.dtype) == (w.shape, w.dtype):
            problem += f"; norm ratio {(g.norm() / w.norm()).item():.3f}"
        raise AssertionError(
            f"{call}: the gradient of {name} differs from the full-batch gradient ({problem}): "
            + (
                named
                or "scale each micro-batch's mean loss by its share of the batch, zero .grad "
                "once before accumulating, and keep every micro-batch's contribution"
            )
        )
    return want


def check_accumulation(call: str, seen, *case, **options):
    """Every call's result and the .grad left behind equal the full-batch gradient."""
    want = check_returned(call, seen, *case, **options)
    assert close(seen["grads"], want), (
        f"after {call}, the parameters' .grad does not hold the full-batch gradient: leave the "
        "accumulated gradient in .grad, ready for optimizer.step()"
    )


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_equals_full_batch():
    case = (0, 12, 4, 1)
    seen = accumulate(*case)
    check_accumulation("accumulated_grad(model, mse_loss, 12 examples, n_micro=4)", seen, *case)
    assert seen["aliased"] == [], (
        f"after accumulated_grad returned, changing .grad also changed the returned {seen['aliased']}: "
        "return copies (p.grad.clone()), not the .grad tensors themselves"
    )


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_ignores_stale_gradients():
    case = (3, 8, 2, 4)
    seen = accumulate(*case, stale=True)
    check_accumulation(
        "accumulated_grad on a model whose .grad held an earlier step's gradient",
        seen,
        *case,
        stale=True,
    )


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_with_uneven_micro_batches():
    case = (5, 10, 4, 6)  # chunks of 3, 3, 2, 2
    seen = accumulate(*case)
    check_accumulation("accumulated_grad(model, mse_loss, 10 examples, n_micro=4)", seen, *case)


@pytest.mark.task("ch02.4")
def test_accumulated_grad_runs_micro_batches():
    case = (0, 12, 4, 1)
    seen = accumulate(*case)
    sizes = seen["sizes"]
    assert sum(sizes) == 12 and max(sizes, default=0) <= math.ceil(12 / 4), (
        f"accumulated_grad(model, loss, 12 examples, n_micro=4) called the model on batches of "
        f"{sizes}; expected 4 micro-batches of 3 (torch.tensor_split(inputs, n_micro)) that "
        "together cover the batch once"
    )
    # the model's calls count beside real gradients (their values are checked elsewhere)
    check_real("accumulated_grad(model, mse_loss, 12 examples, n_micro=4)", seen, *case)


def split_sizes(n: int, n_micro: int) -> list[int]:
    """The sizes of the non-empty pieces torch.tensor_split(range(n), n_micro) makes:
    n_micro pieces (at most n), the first n % n_micro of them one longer."""
    base, extra = divmod(n, n_micro)
    return [base + (k < extra) for k in range(n_micro) if base + (k < extra)]


def micro_batch_problem(n: int, n_micro: int, sizes: list[int]) -> str | None:
    """Why the model's calls ``sizes`` are not the micro-batches of tensor_split (None
    when they are); calls on empty pieces are ignored, they contribute nothing."""
    seen = [s for s in sizes if s]
    want = split_sizes(n, n_micro)
    if sorted(seen) == sorted(want):
        return None
    chunked = [len(c) for c in torch.arange(n).chunk(n_micro)]
    how = (
        "torch.chunk makes pieces of ceil(n / n_micro) and so can give fewer pieces or one "
        "much smaller piece; torch.tensor_split(inputs, n_micro) gives n_micro pieces whose "
        "sizes differ by at most one"
        if sorted(seen) == sorted(chunked)
        else "split into n_micro pieces with torch.tensor_split(inputs, n_micro) (sizes "
        "differ by at most one) and run the model once on each"
    )
    return (
        f"on {n} examples with n_micro={n_micro} the model ran on batches of {seen}, expected "
        f"{want}: {how}"
    )


def pieces_problem(inputs, n_micro: int, pieces) -> str | None:
    """Why the inputs the model ran on, ``pieces``, are not the non-empty pieces of
    ``torch.tensor_split(inputs, n_micro)``, each once, in any order (None when they are).
    Pieces of the right sizes made of other rows (every n_micro-th row, a shuffle) give the
    same gradient for a plain model, but not for one with batch statistics, and they are
    not the micro-batches asked for."""
    sized = micro_batch_problem(len(inputs), n_micro, [len(p) for p in pieces])
    if sized is not None:
        return sized
    want = [p for p in torch.tensor_split(inputs, n_micro) if len(p)]
    left = list(want)
    for piece in (p for p in pieces if len(p)):
        match = next((k for k, w in enumerate(left) if judge.is_equal(piece, w)), None)
        if match is None:
            rows = [
                next((i for i, x in enumerate(inputs) if judge.is_equal(row, x)), "?")
                for row in piece
            ]
            runs = [r.tolist() for r in torch.tensor_split(torch.arange(len(inputs)), n_micro)]
            return (
                f"the model ran on the batch's rows {rows}, which is not one of "
                f"torch.tensor_split's pieces {[r for r in runs if r]}: each micro-batch is a "
                "run of consecutive rows (inputs[start:stop], as tensor_split cuts it), not "
                "every n_micro-th row nor a shuffle"
            )
        del left[match]
    return None


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_micro_batches_follow_tensor_split():
    for n, n_micro in [(10, 4), (5, 4)]:
        case = (7, n, n_micro, 8)
        seen = accumulate(*case)
        problem = micro_batch_problem(n, n_micro, seen["sizes"])
        assert problem is None, f"accumulated_grad(model, mse_loss, batch, {n_micro}): {problem}"
        problem = pieces_problem(make_batch(n, 4, 8)[0], n_micro, seen["pieces"])
        assert problem is None, f"accumulated_grad(model, mse_loss, batch, {n_micro}): {problem}"
        check_real(f"accumulated_grad(model, mse_loss, {n} examples, {n_micro})", seen, *case)
