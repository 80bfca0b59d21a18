"""Hidden tests for ch02: other graphs, cuts, sizes and splits than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import collections
import math
import os
import random
import types
import warnings
from collections.abc import Mapping

import pytest
import torch
from torch import nn

from exercises.ch02.test_autograd import (  # helpers shared with the public twin
    LOSSES,
    BackwardSpy,
    X,
    Y,
    accumulate,
    backward_truth,
    check_accumulation,
    check_real,
    close,
    code_line,
    cut_list,
    earlier_backward,
    full_batch_grad,
    judge_reachability,
    make_batch,
    micro_batch_problem,
    observe_reachability,
    pieces_problem,
    plain_float,
    points_at,
    small_model,
)
from harness import devices, judge
from harness.layouts import laid_out
from harness.probe import because, probe
from harness.target import chapter_module, reference_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief
    from harness.generated import example, examples, given, st
except ImportError:  # (probes never use them)
    pass

ag = chapter_module("ch02", "autograd")
ref = reference_module("ch02", "autograd")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "BackwardSpy HIDDEN_GRAPHS LeakyHead USER_FILES USER_SOURCE healthy_step hidden_cut_cases "
    "PRECISIONS leaky_loss leaving_torch make_batch mode_dependent_model no_grad_graph "
    "nonscalar_leaf_graph observe_reachability precision_cuts "
    "shared_memory_graph "
    "other_dtypes_and_outputs other_nodes_graph preprocess program program_args random_graph "
    "shared_branches_graph sum_of_products_graph very_deep_graph "
    "ACCUMULATE_LAYOUTS LOSSES detached_double small_model NAMED_FORMS _ReadOnlyNames "
    "PartlyReachedNet UNREACHED_PARTS partly_reached_net BackwardMark Tally"
)

HERE = os.path.basename(__file__)


# ---------------------------------------------------------------- ch02.1 reachable_params


def sum_of_products_graph():
    """Two parameters each behind its own MulBackward node (same op, different leaves), a
    leaf used twice, and a frozen tensor."""
    a = torch.tensor([1.0, -2.0], requires_grad=True)
    b = torch.tensor([0.5, 0.5], requires_grad=True)
    c = torch.tensor([2.0, 2.0], requires_grad=True)
    frozen = torch.tensor([3.0, 3.0])
    loss = BackwardSpy.apply(a * frozen).sum() + (b * frozen).sum() + (c * c.detach()).sum()
    return loss, [("frozen", frozen), ("c", c), ("b", b), ("a", a)], "dict"


def other_nodes_graph():
    """Paths through an in-place write into a copy (CopySlices), a view, an index, a where,
    a cat and a custom Function; a branch read through .item() is cut."""
    p = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    q = torch.tensor([0.5, -0.5, 1.0], requires_grad=True)
    r = torch.tensor([4.0, 5.0, 6.0], requires_grad=True)
    s = torch.tensor(2.0, requires_grad=True)
    t = torch.tensor(1.5, requires_grad=True)
    buf = torch.zeros(3)
    h = buf.clone()
    h[1] = q[0] * 2  # CopySlices: q is behind an in-place write into a copy
    v = p.view(3, 1)[2]  # a view, then an index
    w = torch.where(r > 4.5, BackwardSpy.apply(r), torch.zeros(3))
    joined = torch.cat([h, v, w])
    loss = joined.sum() + torch.tensor(s.item()) + t.expand(3).sum()
    return loss, [("p", p), ("q", q), ("r", r), ("s", s), ("t", t)], "generator"


def shared_branches_graph():
    torch.manual_seed(5)
    emb = nn.Embedding(6, 3)
    head = nn.Linear(3, 3)
    side = nn.Linear(3, 3)
    idx = torch.tensor([0, 2, 4])
    e = emb(idx)
    loss = (head(e) + head(e.tanh()) * side(e).data).mean()
    pairs = [(f"emb.{n}", p) for n, p in emb.named_parameters()]
    pairs += [(f"head.{n}", p) for n, p in head.named_parameters()]
    pairs += [(f"side.{n}", p) for n, p in side.named_parameters()]
    return loss, pairs, "pairs"


def no_grad_graph():
    torch.manual_seed(6)
    model = nn.Linear(3, 3)
    with torch.no_grad():
        loss = model(torch.randn(2, 3)).sum()
    return loss, list(model.named_parameters()), "generator"


def very_deep_graph():
    """2500 operations alternating two parameters' contributions (each reached once)."""
    w = torch.tensor(1.0, requires_grad=True)
    v = torch.tensor(1.0, requires_grad=True)
    u = torch.tensor(1.0, requires_grad=True)
    h = w
    for k in range(2500):
        h = h * 0.999 + (0.001 if k else 0.001 * u.detach())
    return h + v * 0.0, [("u", u), ("v", v), ("w", w)], "pairs"


def nonscalar_leaf_graph():
    """A vector 'loss' that is a leaf parameter itself, next to one that is not used."""
    w = torch.ones(3, requires_grad=True)
    other = torch.ones(3, requires_grad=True)
    return w, [("other", other), ("w", w)], "dict"


def random_graph(seed: int):
    """A random graph over five small tensors (some frozen): products, sums, tanh, shared
    nodes, detach, .data, no_grad, in-place writes and .item(); the loss is any node,
    possibly a parameter itself, possibly one that does not require grad. About half the
    graphs also name one tensor twice or three times (tied weights: "dec.w" is "enc.w"),
    the extra names anywhere in the order."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    pairs, pool = [], []
    for k in range(rng.randint(1, 5)):
        t = torch.randn(3, generator=g).requires_grad_(rng.random() < 0.8)
        pairs.append((f"p{k}", t))
        pool.append(t)
    for _ in range(rng.randint(0, 10)):
        a, b = rng.choice(pool), rng.choice(pool)
        op = rng.choice(["mul", "add", "tanh", "detach", "data", "no_grad", "write", "item", "spy"])
        if op == "mul":
            out = a * b
        elif op == "add":
            out = a + b
        elif op == "tanh":
            out = torch.tanh(a) - b
        elif op == "detach":
            out = a.detach() * b
        elif op == "data":
            out = a + b.data
        elif op == "no_grad":
            with torch.no_grad():
                out = a * 2
            out = out + b
        elif op == "write":
            out = a.detach().clone()
            out[0] = b[1]
        elif op == "item":
            out = a * b.sum().item()
        else:
            out = BackwardSpy.apply(a) * 1.0
        pool.append(out)
    loss = rng.choice(pool)
    if rng.random() < 0.5:
        loss = loss.sum()
    form = rng.choice(["pairs", "dict", "generator"])
    if rng.random() < 0.5:  # drawn after the rest, so the graphs above stay as they were
        for k in range(rng.randint(1, 2)):
            _, tied = rng.choice(pairs)
            pairs.insert(rng.randint(0, len(pairs)), (f"tied{k}", tied))
    return loss, pairs, form


def shared_memory_graph():
    """Leaves over one block of memory: p, a leaf made from p's .data (the same storage from
    the same first element) and one over a slice of it; only p and w are on the loss's path."""
    p = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    same = p.data.requires_grad_()
    part = p.detach()[1:].requires_grad_()
    w = torch.tensor(2.0, requires_grad=True)
    loss = (p * w).sum()
    return loss, [("same", same), ("part", part), ("p", p), ("w", w)], "pairs"


HIDDEN_GRAPHS = {
    "sum_of_products": sum_of_products_graph,
    "shared_memory": shared_memory_graph,
    "other_nodes": other_nodes_graph,
    "shared_branches": shared_branches_graph,
    "no_grad": no_grad_graph,
    "very_deep": very_deep_graph,
    "nonscalar_leaf": nonscalar_leaf_graph,
}


@probe
def hidden_reachability(graph):
    """observe_reachability on one of HIDDEN_GRAPHS."""
    return observe_reachability(HIDDEN_GRAPHS[graph])


@probe
def random_reachability(seeds):
    """observe_reachability on random_graph(seed) for each seed."""
    return [observe_reachability(lambda s=s: random_graph(s)) for s in seeds]


def tied_names(seed: int) -> str:
    """Which names of random_graph(seed) are one tensor given again, for a message."""
    pairs = random_graph(seed)[1]
    ties = [
        f"{name} is {next(other for other, q in pairs if q is p and other != name)}"
        for name, p in pairs
        if name.startswith("tied")
    ]
    return f"; {', '.join(ties)}, the same tensor object" if ties else ""


def reference_reachability(build):
    loss, pairs, _ = build()
    return ref.reachable_params(loss, pairs)


def check_hidden(graph, why: str):
    seen = hidden_reachability(graph)
    judge_reachability(graph, seen, backward_truth(HIDDEN_GRAPHS[graph]), why)
    ran = earlier_backward(seen, HIDDEN_GRAPHS[graph])
    assert not seen["touched"] and not ran and seen["backward_error"] is None, (
        "reachable_params must read the graph's structure only: no backward pass, no .grad "
        "changed, and the graph still usable for loss.backward() afterwards"
    )


@pytest.mark.task("ch02.1")
@pytest.mark.points(1)  # one of its two points went to the Mapping-forms test
def test_reachable_params_on_random_graphs():
    """reachable_params agrees with the reference on random graphs with shared nodes, cuts, leaf losses and tensors named twice (tied weights)."""
    seeds = list(range(60))
    with because("reachable_params raised on a random graph"):
        seen = random_reachability(seeds)
    tied_reached = 0
    for seed, obs in zip(seeds, seen):
        want = reference_reachability(lambda s=seed: random_graph(s))
        tied_reached += any(v for name, v in want.items() if name.startswith("tied"))
        assert want == backward_truth(lambda s=seed: random_graph(s)), (
            f"course bug: the reference disagrees with a real backward pass on seed {seed}"
        )
        judge_reachability(
            f"random (seed {seed}{tied_names(seed)})",
            obs,
            want,
            "a parameter is reachable exactly when a chain of next_functions leads from the "
            "loss's grad_fn to its AccumulateGrad node (or when the loss is that parameter); "
            "detach, .data, no_grad and .item() break the chain; one tensor given under "
            "several names (tied weights) is reached under every one of them",
        )
        ran = earlier_backward(obs, lambda s=seed: random_graph(s))
        assert not obs["touched"] and not ran and obs["backward_error"] is None, (
            "reachable_params must not run a backward pass, touch .grad or spend the graph"
        )
    assert tied_reached >= 10, (  # a check on the test's own generator
        f"only {tied_reached} random graphs reach a tensor that is named twice"
    )


@pytest.mark.task("ch02.1")
def test_reachable_params_through_same_kind_nodes_and_reused_leaves():
    """Each node is a distinct object: two MulBackward nodes lead to two different parameters."""
    check_hidden(
        "sum_of_products",
        "nodes of the same kind (two MulBackward0) are different nodes with different inputs; "
        "remember nodes themselves, not their names, and compare leaves by identity",
    )


@pytest.mark.task("ch02.1")
def test_reachable_params_tells_apart_leaves_that_share_memory():
    """Leaves over the same memory (one made from another's .data or a slice of it) are different leaves: only the one on the path is reached."""
    check_hidden(
        "shared_memory",
        "two leaves can share one storage, even start at the same address (t.data, t.detach()) "
        "and still be different tensors: match the AccumulateGrad node's leaf by identity "
        "(id or is), not by data_ptr() or storage",
    )


@pytest.mark.task("ch02.1")
def test_reachable_params_through_other_node_kinds():
    """Paths through CopySlices, views, indexing, where, cat, expand and custom Functions are followed."""
    with because("reachable_params raised on a graph with views and in-place writes"):
        check_hidden(
            "other_nodes",
            "every node kind lists its inputs in next_functions (in-place writes, views, "
            "custom Functions included); a value read through .item() is cut",
        )


@pytest.mark.task("ch02.1")
def test_reachable_params_through_shared_branches():
    """Parameters behind several levels and shared branches are reachable; a .data branch is not."""
    check_hidden(
        "shared_branches",
        "parameters behind several levels of operations are reachable; a branch read through "
        ".data is not",
    )


@pytest.mark.task("ch02.1")
def test_reachable_params_when_nothing_is_reachable():
    """A loss computed under no_grad reaches no parameter."""
    with because("reachable_params raised on a loss computed under no_grad (grad_fn is None)"):
        check_hidden("no_grad", "a loss computed under no_grad has no graph: nothing is reachable")


@pytest.mark.task("ch02.1")
@pytest.mark.timeout(30)
def test_reachable_params_through_a_very_deep_graph():
    """A parameter 2500 operations below the loss is reachable (no recursion limit)."""
    with because(
        "reachable_params raised on a graph 2500 operations deep: walk with an explicit stack"
    ):
        check_hidden(
            "very_deep",
            "walk with an explicit stack or queue, not recursion bounded by Python's recursion "
            "limit; a parameter multiplied by zero is still reachable",
        )


@pytest.mark.task("ch02.1")
def test_reachable_params_when_a_vector_loss_is_a_leaf():
    """A non-scalar loss that is itself a parameter reaches exactly that parameter."""
    with because("reachable_params raised on a leaf loss (grad_fn is None)"):
        check_hidden(
            "nonscalar_leaf",
            "a loss that is itself a parameter has no grad_fn but reaches that parameter",
        )


# ---------------------------------------------------------------- ch02.2 find_graph_cuts


def leaving_torch(w):
    arr = w.detach().numpy()
    back = torch.from_numpy(arr * 2.0)
    listed = torch.tensor(w.tolist())
    scalar = torch.tensor(float(w.sum()))
    copied = torch.tensor(w)
    return back + listed + scalar + copied


class LeakyHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3, 3)

    def forward(self, x):
        h = self.proj(x)
        with torch.no_grad():
            scale = (x * h).norm()
        return h / scale


def leaky_loss(model, x):
    return model(x).sum()


def healthy_step(w, x, y):
    pred = x @ w
    loss = ((pred - y) ** 2).mean()
    best = pred.argmax(dim=1)
    correct = (best == y.argmax(dim=1)).float().mean()
    n = w.shape[0] + w.size(1)
    buf = w.new_zeros(w.shape) + torch.ones_like(w)
    order = torch.sort(pred, dim=1)  # values on the graph, indices integers
    loss = loss + order.values.sum() * 0.0
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad  # an update in place: w still requires grad afterwards
    return loss, correct, n, buf


def preprocess(x):
    with torch.no_grad():
        y = (x - x.mean()) / x.std()
    return y.detach().clone().numpy()


def other_dtypes_and_outputs(w):
    with torch.no_grad():
        d = w.double()
        parts = torch.sort(w, descending=True)
    half = w.half()
    return d.sum() + parts[0].sum() + half.float().sum()


def precision_cuts(w):
    """w: a (2, 3) floating tensor that requires grad, in any floating dtype."""
    kept = w.detach()
    with torch.no_grad():
        doubled = w * 2
    rows = w.tolist()
    planes = w.unsqueeze(0).tolist()
    total = w.sum().item()
    return kept, doubled, rows, planes, total


PRECISIONS = ["float16", "bfloat16", "float32", "float64"]


def hidden_cut_cases():
    g = torch.Generator().manual_seed(9)
    w = torch.randn(5, 5, generator=g).requires_grad_()
    return {
        "leaving": (leaving_torch, (torch.arange(3.0).requires_grad_(),)),
        "module": (leaky_loss, (LeakyHead(), torch.randn(2, 3, generator=g))),
        "healthy": (
            healthy_step,
            (w, torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)),
        ),
        "preprocess": (preprocess, (torch.randn(16, generator=g),)),
        "dtypes": (other_dtypes_and_outputs, (torch.ones(4, requires_grad=True),)),
        "preprocess_grad": (preprocess, (torch.randn(16, generator=g).requires_grad_(),)),
        **{
            precision: (
                precision_cuts,
                (
                    torch.linspace(-1, 1, 6, dtype=getattr(torch, precision))
                    .view(2, 3)
                    .requires_grad_(),
                ),
            )
            for precision in PRECISIONS
        },
    }


@probe
def hidden_cuts(case):
    """find_graph_cuts on one of hidden_cut_cases(): the cuts, and whether each tensor
    argument's .grad was filled afterwards."""
    torch.manual_seed(0)
    fn, args = hidden_cut_cases()[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        found = ag.find_graph_cuts(fn, *args)
    return found, [isinstance(a, torch.Tensor) and a.grad is not None for a in args]


def expect_cuts(found, fn, expected, why):
    cut_list(found, f"find_graph_cuts({fn.__name__}, ...)")
    kinds = [kind for kind, _ in expected]
    lines = [code_line(fn, code) for _, code in expected]  # a kind may cut on several lines
    ops = [str(c.op) for c in found]
    assert len(found) == len(kinds), f"{why}; got {len(found)} cuts {ops}"
    for cut, kind, line in zip(found, kinds, lines):
        assert kind in str(cut.op) and points_at(cut, line, HERE), (
            f"{why}; cuts are reported in execution order, each naming its op and the user "
            f"line; got {[(c.op, c.location) for c in found]}"
        )


@pytest.mark.task("ch02.2")
@pytest.mark.points(2)
def test_find_graph_cuts_when_values_leave_torch():
    """Values leaving torch (numpy, tolist, float, a torch.tensor copy) are cuts at their own line."""
    found, _ = hidden_cuts("leaving")
    expect_cuts(
        found,
        leaving_torch,
        [
            ("detach", "w.detach()"),
            ("tolist", "w.tolist()"),
            ("float", "float(w.sum())"),
            ("tensor", "torch.tensor(w)"),
        ],
        "leaving torch and coming back cuts the path at each exit: detach (before numpy), "
        "tolist, float and a torch.tensor copy — a result that is a Python number, list or "
        "numpy array is a cut too",
    )


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_points_into_user_code_inside_a_module():
    """A cut inside a module's forward is located at the user's line, not inside torch."""
    found, _ = hidden_cuts("module")
    line = code_line(LeakyHead.forward, "(x * h).norm()")
    assert len(found) == 1 and "mul" in str(found[0].op), (
        "an op run under no_grad on a tensor that requires grad is a cut, also inside a module's "
        "forward and whichever argument (not only the first) carries the gradient; later ops on "
        f"its result are not cuts again; got {[c.op for c in found]}"
    )
    assert points_at(found[0], line, HERE), (
        "a cut's location is the user's file and line that ran the op, not a frame inside torch "
        f"(nn.Module.__call__) or inside the diagnostic; got {found[0].location!r}"
    )


def check_preprocess_speaks():
    """find_graph_cuts on preprocess given an input that requires grad: the cuts are there."""
    found, _ = hidden_cuts("preprocess_grad")
    expect_cuts(
        found,
        preprocess,
        [("mean", "x.mean()"), ("sub", "x.mean()"), ("std", "x.std()")],
        "the same preprocessing on an input that requires grad cuts at each op under no_grad "
        "that took it (mean, the subtraction, std), and nowhere after",
    )


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_is_silent_on_a_healthy_step():
    """Integer results, shapes, shape-only constructors, .grad reads and in-place updates are not cuts."""
    found, filled = hidden_cuts("healthy")
    cut_list(found, "find_graph_cuts(healthy_step, ...)")
    assert found == [], (
        "integer and bool results (argmax, comparisons, sort's indices), shapes, shape-only "
        "constructors, reading .grad and an in-place update of a leaf under no_grad are not "
        f"cuts; got {[c.op for c in found]}"
    )
    assert filled[0], "find_graph_cuts must run the function it is given, with its arguments"
    check_preprocess_speaks()  # silence counts beside cuts where there are some


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_ignores_tensors_that_never_required_grad():
    """Nothing is a cut when no input ever required grad."""
    found, _ = hidden_cuts("preprocess")
    cut_list(found, "find_graph_cuts(preprocess, ...)")
    assert found == [], (
        "detach, no_grad and numpy on tensors that never required grad cut nothing: a cut needs "
        f"an input that required grad; got {[c.op for c in found]}"
    )
    check_preprocess_speaks()  # silence counts beside cuts where there are some


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_in_other_dtypes_and_several_outputs():
    """Results of every floating dtype (float16, bfloat16, float64 too) and nested lists from .tolist() are cuts, as is a tuple of tensors made under no_grad; a float16 copy on the graph is not."""
    found, _ = hidden_cuts("dtypes")
    expect_cuts(
        found,
        other_dtypes_and_outputs,
        [("double", "w.double()"), ("sort", "torch.sort(")],
        "any floating result counts (float64 too), and an op returning several tensors is a cut "
        "when none of them requires grad; a dtype change outside no_grad stays on the graph",
    )
    for precision in PRECISIONS:
        found, _ = hidden_cuts(precision)
        expect_cuts(
            found,
            precision_cuts,
            [
                ("detach", "w.detach()"),
                ("mul", "w * 2"),
                ("tolist", "rows = w.tolist()"),
                ("tolist", "planes = w.unsqueeze(0).tolist()"),
                ("item", ".item()"),
            ],
            f"on a (2, 3) {precision} tensor that requires grad, detach, an op under no_grad, "
            "the nested lists .tolist() returns for 2-D and 3-D tensors, and .item() are each a "
            "cut: every floating dtype carries real numbers (half precision included, not only "
            "float32/float64: ask is_floating_point()), and a list of lists of floats holds "
            "them as much as a flat list does (look inside nested lists)",
        )


USER_SOURCE = """def forward(w):
    h = w * 2
    return h.detach() + 1
"""
USER_FILES = [  # sort before and after any real path; name torch without being inside it
    "/0/user_code.py",
    "/~/user_code.py",
    "/0/torch_helpers.py",
    "/~/pytorch-course/prog.py",
    "/torch/prog.py",
]


@probe
def cuts_in_other_files():
    """find_graph_cuts on USER_SOURCE compiled as if it lived in each of USER_FILES."""
    found = []
    for filename in USER_FILES:
        namespace = {}
        exec(compile(USER_SOURCE, filename, "exec"), namespace)
        found.append(ag.find_graph_cuts(namespace["forward"], torch.ones(2, requires_grad=True)))
    return found


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_locates_code_from_any_file():
    """A cut in code from any file (whatever its path) is located at that file's line."""
    for filename, found in zip(USER_FILES, cuts_in_other_files()):
        assert len(found) == 1 and "detach" in str(found[0].op), (
            f"the detach in code from {filename} should be the one cut; got {[c.op for c in found]}"
        )
        assert str(found[0].location) == f"{filename}:3", (
            f"the cut ran at {filename}:3 but its location says {found[0].location!r}: the "
            "first frame that is neither inside torch nor inside your module, wherever the "
            "user's file lives and whatever it is called: 'inside torch' means inside the "
            "folder of the torch package (os.path.dirname(torch.__file__)), not a path that "
            "merely contains the word torch (compare paths for equality or containment, "
            "nothing else)"
        )


def program(w, x, codes):
    """Apply the steps ``codes`` give (positions in STEPS) to h = w, one line per kind of
    step. Codes, not names: the student's code receives them, and a name says what it cuts."""
    h = w * 1.0
    g = torch.Generator().manual_seed(len(codes))  # random constructors leave torch's own be
    for code in codes:
        if code == 0:
            h = h.detach() + 0.0
        elif code == 1:
            h = h.data * 1.0
        elif code == 2:
            with torch.no_grad():
                h = h * x
        elif code == 3:
            h = h * 0.5 + h.sum().item()
        elif code == 4:
            h = torch.tensor(h.tolist())
        elif code == 5:
            h = torch.from_numpy(h.detach().numpy() * 1.0)
        elif code == 6:
            h = torch.tensor(h)
        elif code == 7:
            h = h - float(h.mean())
        elif code == 8:
            h = h + w
        elif code == 9:
            h = h + h.argmax()
        elif code == 10:
            h = h * (h > 0)
        elif code == 11:
            h = h + torch.zeros_like(h)
        elif code == 12:
            h = h * h.new_ones(h.shape)
        elif code == 13:
            top, _ = h.max(dim=0, keepdim=True)
            h = h + top
        elif code == 14:
            with torch.no_grad():
                h = torch.stack([x, h]).sum(0)
        elif code == 15:
            with torch.no_grad():
                h = torch.add(x, other=h)
        elif code == 16:
            with torch.no_grad():
                h = h.double().float()
        elif code == 17:
            h = h + int(h.numel())
        elif code == 18:  # functions torch writes in Python: their frames sit between
            with torch.no_grad():  # the op and this line
                h = nn.functional.relu(h)
        elif code == 19:
            with torch.no_grad():
                h = nn.functional.normalize(h, dim=0)
        elif code == 20:
            with torch.no_grad():
                h = h / (1.0 + h.norm())
        elif code == 21:
            with torch.no_grad():
                h = h + nn.functional.mse_loss(h, x)
        elif code == 22:  # a numpy array straight from a tensor that requires grad
            h = torch.from_numpy(h.numpy(force=True) * 1.0)
        elif code == 23:  # a 0-d numpy array; the tensor h stays on the graph
            h = h + torch.as_tensor(h.sum().numpy(force=True))
        elif code == 24:
            h = h * 0.5 + torch.from_numpy(h.double().numpy(force=True)).float()
        elif code == 25:
            h = h * 0.5 + torch.from_numpy(h.half().numpy(force=True)).float()
        elif code == 26:
            h = h + torch.Tensor.numpy(h, force=True).sum()
        elif code == 27:  # one operation with several outputs is one cut
            with torch.no_grad():
                h = torch.cat(h.split(1))
        elif code == 28:
            with torch.no_grad():
                h = h.sort().values + h.unbind(0)[0]
        # constructors that read only h's shape (and dtype, device), random ones included
        elif code == 29:
            h = h + torch.empty_like(h).fill_(1.0)
        elif code == 30:
            h = h * torch.full_like(h, 0.5)
        elif code == 31:
            h = h * torch.ones_like(input=h, dtype=torch.float64).float()
        elif code == 32:
            h = h + torch.rand_like(h, generator=g)
        elif code == 33:
            with torch.no_grad():
                noise = torch.randn_like(h, generator=g)
            h = h + 0.01 * noise
        elif code == 34:
            h = h + torch.randint_like(h, 3, generator=g)
        elif code == 35:
            h = h + h.new_empty(h.shape).zero_()
        elif code == 36:
            h = h * h.new_full(h.shape, 2.0)
        elif code == 37:
            h = h - h.new_zeros(h.shape)
        elif code == 38:
            h = h * h.new_tensor([1.0, 2.0, 0.5])
        elif code == 39:
            h = h + h.new_empty_strided(h.shape, h.stride()).fill_(0.0)
        # in place: the op changes the tensor it took, which required grad until then
        elif code == 40:
            h.detach_()  # h is never w, nor a view: every step above makes a new tensor
        elif code == 41:
            h = h * torch.full((3,), 2.0, requires_grad=True).requires_grad_(False)
        # one operation, several real-valued tensors, none of them views (a view of h would
        # still require grad): one cut each time, whatever the count of its results
        elif code == 42:
            with torch.no_grad():
                var, mean = torch.var_mean(h)
            h = (h - mean) / (var + 1.0)
        elif code == 43:
            with torch.no_grad():
                low, high = h.aminmax()
            h = h * 0.5 + (high - low)
        elif code == 44:
            with torch.no_grad():
                counts, edges = torch.histogram(h, bins=2)
            h = h + counts.sum() + edges[0]
        elif code == 45:
            with torch.no_grad():
                std, mean = torch.std_mean(h, dim=0, keepdim=True)
            h = (h - mean) * std
        # complex results carry values a gradient flows through, as real ones do
        elif code == 46:
            with torch.no_grad():
                c = torch.complex(h, h)
            h = h + c.imag
        elif code == 47:
            c = h.to(torch.complex64).detach()
            h = h * 0.5 + c.real
    return h


STEPS = [
    "detach",
    "data",
    "no_grad",
    "item",
    "tolist",
    "numpy",
    "copy",
    "float",
    "reattach",
    "argmax",
    "compare",
    "zeros_like",
    "new_ones",
    "max_dim",
    "stack_no_grad",
    "kwarg_no_grad",
    "double_no_grad",
    "int",
    "relu_no_grad",
    "normalize_no_grad",
    "norm_no_grad",
    "mse_loss_no_grad",
    "numpy_force",
    "numpy_scalar",
    "numpy_float64",
    "numpy_float16",
    "numpy_unbound_method",
    "split_no_grad",
    "sort_unbind_no_grad",
    "empty_like",
    "full_like",
    "ones_like_float64",
    "rand_like",
    "randn_like_no_grad",
    "randint_like",
    "new_empty",
    "new_full",
    "new_zeros",
    "new_tensor",
    "new_empty_strided",
    "detach_",
    "requires_grad_",
    "var_mean_no_grad",
    "aminmax_no_grad",
    "histogram_no_grad",
    "std_mean_no_grad",
    "complex_no_grad",
    "complex_detach",
]
COMPLEX = {"complex_no_grad", "complex_detach"}
MULTI_OUTPUT = {"var_mean_no_grad", "aminmax_no_grad", "histogram_no_grad", "std_mean_no_grad"}
SHAPE_ONLY = {"zeros_like", "new_ones", *STEPS[STEPS.index("empty_like") : STEPS.index("detach_")]}
IN_PLACE = {"detach_", "requires_grad_"}


def program_args():
    return torch.tensor([0.5, -1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0, -1.0])


def random_programs(count: int, seed: int):
    """``count`` random programs of 1 to 8 steps; reattach often, so later steps see a
    tensor that requires grad again."""
    rng = random.Random(seed)
    weights = [3 if name == "reattach" else 1 for name in STEPS]
    return [rng.choices(STEPS, weights, k=rng.randint(1, 8)) for _ in range(count)]


def looped_programs(count: int, seed: int):
    """``count`` programs that run one body of 1 to 3 steps 2 to 4 times over, after 0 to 2
    other steps, as a loop does: each pass starts by reattaching, so the body's cuts happen
    again on every pass, at the lines they happened before."""
    rng = random.Random(seed)
    body_steps = [name for name in STEPS if name not in SHAPE_ONLY and name != "reattach"]
    programs = []
    for _ in range(count):
        body = ["reattach", *rng.choices(body_steps, k=rng.randint(1, 3))]
        programs.append(rng.choices(STEPS, k=rng.randint(0, 2)) + body * rng.randint(2, 4))
    return programs


@probe
def program_cuts(programs):
    """find_graph_cuts(program, w, x, codes) for each program's codes."""
    found = []
    for codes in programs:
        w, x = program_args()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            found.append(ag.find_graph_cuts(program, w, x, codes))
    return found


def codes_of(steps: list[str]) -> list[int]:
    return [STEPS.index(name) for name in steps]


def reference_cuts(steps):
    w, x = program_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return ref.find_graph_cuts(program, w, x, codes_of(steps))


def line_of(cut) -> str:
    return str(cut.location).rsplit(":", 1)[-1]


@pytest.mark.task("ch02.2")
@pytest.mark.points(3)
def test_find_graph_cuts_agrees_with_the_reference_on_generated_programs():
    """find_graph_cuts reports the same cuts, in order and at the same lines, as the reference."""
    programs = (
        [[name] for name in STEPS] + random_programs(78, seed=2) + looped_programs(16, seed=3)
    )
    with because("find_graph_cuts raised on a generated program"):
        results = program_cuts([codes_of(steps) for steps in programs])
    for steps, found in zip(programs, results):
        want = reference_cuts(steps)
        got_ops = [str(c.op) for c in found]
        want_ops = [c.op for c in want]
        constructors = sorted(SHAPE_ONLY.intersection(steps))
        shape_only = (
            f". The program builds tensors with {constructors}: every constructor that reads "
            "only an input's shape (dtype, device) is no cut, the whole *_like and new_* "
            "families, random ones included, not just zeros_like and new_zeros: its result "
            "holds none of the input's values. Decide by the rule, not by a list of examples"
            if constructors
            else ""
        )
        repeated = (
            ". The program runs some steps more than once, as a loop does: every time an "
            "operation runs and cuts is one Cut of its own, also when an equal Cut (same "
            "op, same line) was reported before, so what the list keeps must not merge them"
            if len(found) < len(want) and len(set(steps)) < len(steps)
            else ""
        )
        in_place = (
            f". The program runs {sorted(IN_PLACE.intersection(steps))}, which change the "
            "tensor they take: when such an op takes a tensor that requires grad and leaves it "
            "one that does not, it is a cut like detach (an in-place update after which the "
            "tensor still requires grad, an optimizer step, is none), so whether an input "
            "required grad is a question about the moment the op took it, not about the input "
            "once the op has run"
            if IN_PLACE.intersection(steps) and len(found) < len(want)
            else ""
        )
        several = (
            f". The program runs {sorted(MULTI_OUTPUT.intersection(steps))} under no_grad: "
            "one call that returns several real-valued tensors (var_mean's variance and mean, "
            "aminmax's min and max, histogram's counts and edges), none of them requiring "
            "grad. That is one operation and one cut, however many tensors it hands back: "
            "decide once per call, after looking at all of its results, not once per result"
            if MULTI_OUTPUT.intersection(steps) and len(found) > len(want)
            else ""
        )
        complex_results = (
            f". The program runs {sorted(COMPLEX.intersection(steps))}: a complex result "
            "(torch.complex under no_grad, a complex tensor detached) holds numbers a gradient "
            "flows through as much as a float one; only integer and bool results cannot carry "
            "one, so look at how a result's dtype is judged"
            if COMPLEX.intersection(steps) and len(found) < len(want)
            else ""
        )
        assert len(found) == len(want) and all(
            w.strip("_") in g for g, w in zip(got_ops, want_ops)
        ), (
            f"for the steps {steps} the cuts should be {want_ops}, got {got_ops}: a cut is a "
            "call whose input required grad and whose floating or complex result (tensor, "
            "Python float or list, numpy array) does not, one Cut per operation however many values or "
            "tensors it returns; integer results, shape-only constructors and calls on tensors "
            "that no longer require grad when the call takes them are not cuts"
            f"{shape_only}{repeated}{in_place}{several}{complex_results}"
        )
        for g, w in zip(found, want):
            assert points_at(g, int(line_of(w)), HERE), (
                f"for the steps {steps} the cut {w.op} ran at {HERE}:{line_of(w)}, but its "
                f"location says {g.location!r}: the first frame outside torch and your module "
                "(functions torch writes in Python, such as F.relu, F.normalize or Tensor.norm, "
                "put frames of their own between your mode and the user's line: skip every "
                "frame inside torch rather than a fixed number of frames)"
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
def test_two_stage_follows_both_gradients():
    """Both weights follow gradient descent on the two-stage loss, each step with its own gradient."""
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
    judge.number(r.w1s, w1s, f"w1 must follow gradient descent on both weights: {why}", abs=1e-4)
    judge.number(r.w2s, w2s, f"w2 must follow gradient descent on both weights: {why}", abs=1e-4)
    judge.number(
        r.losses,
        losses,
        "losses[k] must be the loss of the prediction made by w1s[k], w2s[k]",
        abs=1e-6,
        rel=1e-4,
    )


@pytest.mark.task("ch02.3")
def test_two_stage_log_is_detached_and_complete():
    """The log holds one detached copy of each step's features, and w1 learns."""
    r = ag.two_stage_train(30, 0.03)
    assert len(r.features) == 30 and all(not f.requires_grad for f in r.features), (
        "the log holds one detached copy per step (a logged tensor that requires grad keeps its "
        "step's whole graph alive)"
    )
    for k in (0, 7, 29):
        w1 = plain_float(r.w1s[k], f"two_stage_train(30, 0.03).w1s[{k}]")
        judge.close(
            r.features[k],
            w1 * X,
            f"features[{k}] must be the first stage's output at step {k}, w1s[{k}] * x",
            atol=1e-5,
            rtol=1e-5,
        )
    last = plain_float(r.w1s[-1], "two_stage_train(30, 0.03).w1s[-1]")
    assert last > 1.0, "w1 must learn when the first stage stays on the graph"


@pytest.mark.task("ch02.3")
def test_two_stage_zero_and_one_step():
    """Zero steps change nothing; one step moves both weights against their own gradients."""
    r = ag.two_stage_train(0, 0.02)
    judge.exactly(
        (r.losses, r.features, r.w1s, r.w2s),
        ([], [], [0.5], [1.0]),
        "zero steps record no loss and no features, and leave the starting weights 0.5 and 1.0 "
        "((losses, features, w1s, w2s))",
    )
    r = ag.two_stage_train(1, 0.1)
    one_step = (
        "one step from w1=0.5, w2=1.0 must move both weights against their own gradients "
        "(-37.5 for w1, -18.75 for w2)"
    )
    judge.number(r.w1s, [0.5, 4.25], f"w1s: {one_step}", abs=1e-12, rel=1e-6)
    judge.number(r.w2s, [1.0, 2.875], f"w2s: {one_step}", abs=1e-12, rel=1e-6)


@pytest.mark.task("ch02.3")
@examples(12)
@given(steps=st.integers(0, 40), lr=st.floats(0.001, 0.03))
def test_two_stage_agrees_with_the_reference(steps, lr):
    """two_stage_train's weights, losses and features equal the reference run for any steps and lr."""
    got = ag.two_stage_train(steps, lr)
    want = ref.two_stage_train(steps, lr)
    descent = (
        f"two_stage_train({steps}, {lr:.4g}): the weights differ from gradient descent on both "
        "w1 and w2 (first stage on the graph, .grad cleared after every update)"
    )
    judge.number(got.w1s, want.w1s, f"w1s: {descent}", abs=1e-6, rel=1e-5)
    judge.number(got.w2s, want.w2s, f"w2s: {descent}", abs=1e-6, rel=1e-5)
    judge.number(
        got.losses,
        want.losses,
        "losses[k] must be the loss of step k's prediction",
        abs=1e-6,
        rel=1e-5,
    )
    judge.number(
        (got.w1, got.w2),
        (want.w1, want.w2),
        "(w1, w2) are the values after the last update",
        abs=1e-6,
        rel=1e-5,
    )
    copies = "features[k] is a detached copy of step k's first-stage output"
    assert type(got.features) is list and len(got.features) == steps, (
        f"{copies}: {steps} steps log {steps} tensors, got {brief(got.features)}"
    )
    for k, (f, g) in enumerate(zip(got.features, want.features)):
        judge.close(f, g, f"features[{k}]: {copies}", atol=1e-5, rtol=1e-5)
        assert not f.requires_grad, f"features[{k}] requires grad: {copies}"


@probe
def first_stage_on(w1_value, x):
    """first_stage on a fresh w1 and the given x: the output, whether a gradient reaches
    w1 from every entry (w1.grad after backward of out * weights), and the log."""
    w1 = torch.tensor(w1_value, requires_grad=True)
    log = ["earlier entry"]
    out = ag.first_stage(w1, x, log)
    grad = None
    if isinstance(out, torch.Tensor) and out.requires_grad:
        (out * torch.arange(1.0, out.numel() + 1).reshape(out.shape)).sum().backward()
        grad = None if w1.grad is None else w1.grad.item()
    entries = [
        (t.requires_grad, t.detach().clone()) if isinstance(t, torch.Tensor) else t for t in log
    ]
    return out, grad, entries


def first_stage_cases(seed=35):
    """(w1 value, x) over first_stage's domain: x 0-d, empty, of one entry, with sizes of
    1 beside others, float32 and float64; w1 negative, zero, whole or fractional."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    shapes = [(2, 3), (), (0,), (1,), (1, 1), (4, 1), (1, 5), (2, 0, 3), (3, 3), (6,), (2, 1, 2)]
    cases = []
    for k, shape in enumerate(shapes * 2):
        dtype = torch.float64 if k % 2 else torch.float32
        x = torch.randn(shape, generator=g, dtype=dtype) * rng.choice([1.0, 10.0])
        cases.append((rng.choice([-1.5, 0.0, 2.0, 0.25, -3.0]), x))
    return cases


@probe
def first_stage_cases_seen(cases):
    """first_stage_on each (w1 value, x) of ``cases``: {"value": what it observed} or what
    first_stage raised."""
    out = []
    for w1_value, x in cases:
        try:
            out.append({"value": first_stage_on(w1_value, x)})
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            out.append({"raised": f"{type(exc).__name__}: {str(exc)[:200]}"})
    return out


def first_stage_problem(w1_value, x, outcome):
    """What is wrong with first_stage's outcome on (w1 value, x), or None."""
    if "raised" in outcome:
        return f"it raised {outcome['raised']}"
    out, grad, entries = outcome["value"]
    want = torch.tensor(w1_value) * x
    if not judge.is_close(out, want, atol=1e-8, rtol=1e-5, dtype=want.dtype):
        return f"it returned {brief(out)}, expected w1 * x = {brief(want)}"
    weights = torch.arange(1.0, x.numel() + 1, dtype=x.dtype).reshape(x.shape)
    if x.numel() and not judge.is_number(grad, float((weights * x).sum()), abs=1e-9, rel=1e-5):
        return (
            f"a backward pass from the output gave w1.grad {grad!r}, expected "
            f"{float((weights * x).sum()):.6g}: the output must stay on the graph, connected "
            "to w1 itself"
        )
    if len(entries) != 2 or entries[0] != "earlier entry":
        return f"the log it was given (one earlier entry) became {brief(entries)}"
    flag, logged = entries[1]
    if flag or not judge.is_close(logged, want, atol=1e-8, rtol=1e-5, dtype=want.dtype):
        return (
            f"it logged {brief(logged)} (requires grad: {flag}), expected a detached copy "
            f"of w1 * x, {brief(want)}"
        )
    return None


@pytest.mark.task("ch02.3")
def test_first_stage_on_other_inputs():
    """first_stage returns w1 * x on the graph for any x (0-d, empty, sizes of 1, float64) and any w1, and appends one detached copy to the log."""
    cases = first_stage_cases()
    outcomes = first_stage_cases_seen(cases)
    failed = []
    for (w1_value, x), outcome in zip(cases, outcomes):
        problem = first_stage_problem(w1_value, x, outcome)
        if problem is not None:
            failed.append((x.numel(), w1_value, x, problem))
    if failed:
        _, w1_value, x, problem = min(failed, key=lambda f: f[0])
        raise AssertionError(
            f"first_stage(w1=tensor({w1_value}, requires_grad=True), x of shape "
            f"{tuple(x.shape)} {x.dtype}, log=['earlier entry']): {problem} ({len(failed)} of "
            f"{len(cases)} inputs differ). first_stage returns w1 * x itself, on the graph, "
            "with x's shape (0-d and empty included) and the dtype w1 * x has, and appends "
            "one detached copy of it to the log"
        )


# ---------------------------------------------------------------- ch02.4 accumulated_grad


@pytest.mark.task("ch02.4")
def test_accumulated_grad_weights_unequal_chunks_of_a_relu_net():
    """Uneven micro-batches are weighted by their share of the batch."""
    case = (11, 10, 3, 12)
    seen = accumulate(*case, width=3, kind="relu")
    check_accumulation(
        "accumulated_grad with micro-batches of unequal size (10 examples in 3)",
        seen,
        *case,
        width=3,
        kind="relu",
    )


@pytest.mark.task("ch02.4")  # its second point per case went to the unreached-parameters test
@pytest.mark.parametrize("n_micro", [1, 6])
def test_accumulated_grad_at_the_extremes(n_micro):
    """One micro-batch, and one example per micro-batch, both give the full-batch gradient."""
    case = (13, 6, n_micro, 14)
    seen = accumulate(*case, width=6, kind="linear", stale=True)
    check_accumulation(
        f"accumulated_grad with n_micro={n_micro} on 6 examples, after a stale backward",
        seen,
        *case,
        width=6,
        kind="linear",
        stale=True,
    )


@pytest.mark.task("ch02.4")
def test_accumulated_grad_for_a_classifier_called_twice():
    """A second call starts from zero instead of adding onto the first call's gradient."""
    case = (15, 20, 5, 16)
    seen = accumulate(*case, width=5, loss="cross_entropy", calls=2)
    check_accumulation(
        "accumulated_grad(model, cross_entropy, 20 examples, n_micro=5), called twice",
        seen,
        *case,
        width=5,
        loss="cross_entropy",
    )


@pytest.mark.task("ch02.4")  # its second point went to the stays-on-the-device test
@examples(21)  # beside the example below
# a float64 model on shares that float32 cannot hold (5 micro-batches of 13), every run
@example(n=13, share=0.4, width=3, kind="tanh", loss="mse", stale=True, seed=7, dtype="float64")
@given(
    n=st.integers(1, 13),
    share=st.floats(0.0, 1.0),
    width=st.integers(2, 5),
    kind=st.sampled_from(["tanh", "relu", "linear"]),
    loss=st.sampled_from(["mse", "cross_entropy"]),
    stale=st.booleans(),
    seed=st.integers(0, 1000),
    dtype=st.sampled_from(["float32", "float64"]),
)
def test_accumulated_grad_on_generated_batches(n, share, width, kind, loss, stale, seed, dtype):
    """The accumulated gradient equals the full-batch gradient, in the model's dtype, for any batch size and split."""
    n_micro = max(1, min(n, round(share * n)))
    case = (seed, n, n_micro, seed + 1)
    options = {"width": width, "kind": kind, "loss": loss, "stale": stale, "dtype": dtype}
    seen = accumulate(*case, **options)
    check_accumulation(
        f"accumulated_grad on {n} examples in {n_micro} micro-batches ({loss}, {kind}, {dtype})",
        seen,
        *case,
        **options,
    )
    inputs = make_batch(n, width, seed + 1, loss, dtype)[0]
    problem = pieces_problem(inputs, n_micro, seen["pieces"])
    assert problem is None, f"accumulated_grad on {n} examples, n_micro={n_micro}: {problem}"
    if dtype == "float64":  # float64's own precision: any order of the sums is within 1e-10
        want = full_batch_grad(seed, n, seed + 1, width, kind, loss, dtype)
        for where, got in (("returned", seen["results"][-1]), ("left in .grad", seen["grads"])):
            for name, w in want.items():
                assert judge.is_close(got[name], w, atol=1e-12, rtol=1e-10), (
                    f"accumulated_grad on {n} float64 examples in {n_micro} micro-batches "
                    f"({loss}, {kind}): the gradient of {name} {where} differs from the "
                    f"full-batch gradient ({judge.mismatch(got[name], w, atol=1e-12, rtol=1e-10)})"
                    " by about float32's rounding (1e-8 of it), though the model, the "
                    "batch and every backward pass are float64: something on the way (a share "
                    "computed as a tensor, which torch makes float32, a .float(), a float32 "
                    "sum) holds only float32's 7 digits; keep the weights Python floats or in "
                    "the model's dtype"
                )


@probe
def accumulated_on_meta(dtype):
    """accumulated_grad of a Linear(3, 2) moved to the meta device (a device other than the
    CPU that holds no values, like a GPU you don't have) in ``dtype``, on 5 examples there in
    2 micro-batches: each returned tensor's and each .grad's device, dtype and shape, or what
    was raised."""
    meta, dt = torch.device("meta"), getattr(torch, dtype)
    model = nn.Linear(3, 2).to(meta, dt)
    batch = (torch.zeros(5, 3, dtype=dt, device=meta), torch.zeros(5, 2, dtype=dt, device=meta))
    outcome, got = devices.on_meta(ag.accumulated_grad, model, nn.functional.mse_loss, batch, 2)
    if outcome == devices.NEEDS_VALUES:
        return {"cannot tell": got}  # it reads values: right on a GPU, impossible on meta
    if outcome != "returned":
        return {"raised": got if outcome == "raised" else f"mixed devices: {got}"}

    def desc(t):
        if not isinstance(t, torch.Tensor):
            return f"a {type(t).__name__}"
        return f"{t.dtype} {list(t.shape)} on {t.device}"

    returned = {str(k): desc(v) for k, v in got.items()} if isinstance(got, dict) else desc(got)
    return {"returned": returned, "grads": {n: desc(p.grad) for n, p in model.named_parameters()}}


@pytest.mark.task("ch02.4")
def test_accumulated_grad_stays_on_the_models_device():
    """accumulated_grad of a model and batch on another device (meta) leaves each .grad and returns each copy there, in the model's dtype; on the CPU it is the full-batch gradient."""
    case = (31, 6, 4, 32)
    seen = accumulate(*case, width=3, kind="relu")
    check_accumulation(
        "accumulated_grad on 6 examples in 4 micro-batches", seen, *case, width=3, kind="relu"
    )
    for dtype in ("float32", "float64"):
        seen = accumulated_on_meta(dtype)
        if "cannot tell" in seen:
            continue
        want = {"weight": f"torch.{dtype} [2, 3] on meta", "bias": f"torch.{dtype} [2] on meta"}
        assert seen.get("returned") == want and seen.get("grads") == want, (
            f"accumulated_grad(nn.Linear(3, 2).to('meta', torch.{dtype}), mse_loss, 5 examples "
            f"on meta, n_micro=2) (the meta device stands for a GPU here) gave {seen}, expected "
            f"the returned copies and each .grad as {want}: a running sum started with "
            "torch.zeros(p.shape) or a copy made with torch.tensor(...) lives on the default "
            "CPU and fails on a CUDA model; start from torch.zeros_like(p) or p.grad.clone()"
        )


@pytest.mark.task("ch02.4")
@pytest.mark.parametrize("n_micro", [4, 7])
def test_accumulated_grad_with_more_micro_batches_than_examples(n_micro):
    """With n_micro larger than the batch, the empty chunks of tensor_split contribute nothing."""
    case = (21, 3, n_micro, 22)
    with because(
        f"accumulated_grad raised with n_micro={n_micro} on 3 examples: tensor_split then "
        "yields empty chunks, which contribute nothing"
    ):
        seen = accumulate(*case, width=3, kind="relu")
    check_accumulation(
        f"accumulated_grad with n_micro={n_micro} on 3 examples (empty chunks at the end)",
        seen,
        *case,
        width=3,
        kind="relu",
    )


class Tally:
    """A count held by reference (torch.func rebuilds a list passed to a Function)."""

    count = 0


class BackwardMark(torch.autograd.Function):
    """The identity, whose backward counts itself in a Tally: marks when a graph's backward
    ran (through .backward, autograd.grad or torch.func alike)."""

    @staticmethod
    def forward(x, done):
        return x.view_as(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.done = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        ctx.done.count += 1
        return grad, None


@probe
def backwards_before_each_forward(model_seed, n, n_micro, data_seed):
    """accumulated_grad on a fresh model whose output marks its backward: for each forward
    that builds a graph on a non-empty piece, how many backward passes had run before it;
    and what the call returned."""
    model = small_model(model_seed, 3)
    batch = make_batch(n, 3, data_seed)
    done, before = Tally(), []

    def mark(module, args, out):
        if torch.is_grad_enabled() and len(args[0]):
            before.append(done.count)
            return BackwardMark.apply(out, done)
        return None

    model.register_forward_hook(mark)
    result = ag.accumulated_grad(model, LOSSES["mse"], batch, n_micro)
    return before, result


@pytest.mark.task("ch02.4")
def test_accumulated_grad_runs_backward_on_each_micro_batch():
    """Each micro-batch's backward runs before the next micro-batch's forward, so one graph at a time is in memory."""
    case = (5, 12, 4, 6)  # model seed, examples, micro-batches, data seed
    with because("accumulated_grad(model, mse, 12 examples, n_micro=4) raised"):
        before, result = backwards_before_each_forward(*case)
    # the order earns its point only beside real gradients from the four micro-batches
    check_real(
        "accumulated_grad on 12 examples in 4 micro-batches", {"results": [result]}, *case, width=3
    )
    assert len(before) == 4, (
        f"accumulated_grad on 12 examples in 4 micro-batches ran the model {len(before)} times "
        "with gradients on: run it once on each of tensor_split's 4 pieces"
    )
    late = next((k for k, b in enumerate(before) if b < k), None)
    assert late is None, (
        f"accumulated_grad on 12 examples in 4 micro-batches ran the forward of micro-batch "
        f"{late + 1} while an earlier micro-batch's graph still waited for its backward "
        f"(backward passes run before each forward: {before}): accumulation runs backward on "
        "each micro-batch before the next one's forward, so only one micro-batch's graph is in "
        "memory at a time; summing the losses and calling backward once gives the same "
        "gradient but keeps every graph alive, which is what the split was meant to avoid"
    )


@pytest.mark.task("ch02.4")
def test_accumulated_grad_splits_into_n_micro_batches():
    """The model sees n_micro micro-batches that cover the batch once, none larger than ceil(n / n_micro)."""
    case = (2, 11, 4, 3)
    seen = accumulate(*case, width=3)
    sizes = seen["sizes"]
    assert sum(sizes) == 11 and len(sizes) == 4 and max(sizes) <= math.ceil(11 / 4), (
        f"11 examples in n_micro=4 micro-batches were run as batches of {sizes}: split into "
        "n_micro pieces (torch.tensor_split), not pieces of n_micro examples, and run each once"
    )
    # the model's calls count beside real gradients (their values are checked elsewhere)
    check_real("accumulated_grad on 11 examples in 4 micro-batches", seen, *case, width=3)


@pytest.mark.task("ch02.4")
@pytest.mark.parametrize("n, n_micro", [(6, 4), (7, 3), (13, 5), (9, 6)])
def test_accumulated_grad_micro_batch_sizes_where_chunk_differs(n, n_micro):
    """Micro-batches are tensor_split's n_micro pieces (sizes differ by at most one), also where torch.chunk would cut fewer or lopsided pieces."""
    case = (n + n_micro, n, n_micro, n * n_micro)
    seen = accumulate(*case, width=3)
    problem = micro_batch_problem(n, n_micro, seen["sizes"])
    assert problem is None, f"accumulated_grad: {problem}"
    problem = pieces_problem(make_batch(n, 3, n * n_micro)[0], n_micro, seen["pieces"])
    assert problem is None, f"accumulated_grad on {n} examples, n_micro={n_micro}: {problem}"
    check_real(f"accumulated_grad on {n} examples in {n_micro} micro-batches", seen, *case, width=3)


@pytest.mark.task("ch02.4")
def test_accumulated_grad_leaves_the_model_and_the_batch_as_they_were():
    """accumulated_grad only fills .grad: parameter values and the batch's tensors are unchanged."""
    case = (31, 10, 3, 32)
    seen = accumulate(*case, width=4, kind="relu", stale=True)
    check_accumulation(
        "accumulated_grad on 10 examples in 3 micro-batches, after a stale backward",
        seen,
        *case,
        width=4,
        kind="relu",
        stale=True,
    )
    assert seen["moved"] == [], (
        f"accumulated_grad changed the values of {seen['moved']}: it computes a gradient and "
        "leaves it in .grad, it does not take a step (no optimizer.step(), no p -= lr * grad); "
        "the caller steps once after accumulating"
    )
    assert not seen["batch_changed"], (
        "accumulated_grad changed the batch's inputs or targets: scale the micro-batch's "
        "loss, never the data, and do not write into the caller's tensors"
    )


def mode_dependent_model(seed: int, width: int) -> nn.Module:
    """Linear -> BatchNorm (running statistics of its own) -> ReLU -> Linear, in eval mode:
    its forward, and its buffers, depend on the mode it is in. (No Dropout: in training
    mode it draws from the global generator, and that invariant would speak first.)"""
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(width, width),
        nn.BatchNorm1d(width),
        nn.ReLU(),
        nn.Linear(width, width),
    )
    with torch.no_grad():
        model[1].running_mean.copy_(torch.linspace(-0.5, 0.5, width))
        model[1].running_var.copy_(torch.linspace(0.5, 2.0, width))
    return model.eval()


@probe
def accumulate_in_eval_mode(seed, n, n_micro, width):
    """accumulated_grad on mode_dependent_model (eval mode) with an MSE loss: what it
    returned, the .grad it left, and each submodule's training flag afterwards."""
    model = mode_dependent_model(seed, width)
    batch = make_batch(n, width, seed + 1)
    got = ag.accumulated_grad(model, nn.functional.mse_loss, batch, n_micro)
    grads = {k: None if p.grad is None else p.grad.clone() for k, p in model.named_parameters()}
    return {"result": got, "grads": grads, "training": [m.training for m in model.modules()]}


def eval_mode_gradient(seed, n, width):
    """The full-batch gradient of mode_dependent_model as the caller holds it (eval mode)."""
    model = mode_dependent_model(seed, width)
    inputs, targets = make_batch(n, width, seed + 1)
    nn.functional.mse_loss(model(inputs), targets).backward()
    return {k: p.grad.clone() for k, p in model.named_parameters()}


@pytest.mark.task("ch02.4")
def test_accumulated_grad_keeps_an_eval_mode_model_in_eval_mode():
    """On a model in eval mode (BatchNorm) the result is that model's full-batch gradient, and its mode and running statistics stay as they were."""
    for seed, n, n_micro in [(41, 9, 1), (43, 10, 3), (47, 5, 5)]:
        call = (
            f"accumulated_grad(model in eval mode with BatchNorm1d, mse_loss, "
            f"{n} examples, n_micro={n_micro})"
        )
        eval_mode = (
            "the caller's model is in eval mode (BatchNorm normalises with its running "
            "statistics, not the micro-batch's), and the full-batch gradient is "
            "that model's: leave the mode alone (no model.train()), it is not "
            "accumulated_grad's to choose"
        )
        with because(f"{call} raised: {eval_mode}"):
            seen = accumulate_in_eval_mode(seed, n, n_micro, 3)
        assert not any(seen["training"]), (
            f"after {call} the model is in training mode ({seen['training']}): {eval_mode}"
        )
        want = eval_mode_gradient(seed, n, 3)
        assert close(seen["result"], want), (
            f"{call} returned {brief(seen['result'])}, not the eval-mode full-batch gradient: "
            f"{eval_mode}"
        )
        assert close(seen["grads"], want), (
            f"after {call}, .grad does not hold the eval-mode full-batch gradient: {eval_mode}"
        )


# Parameters the loss may not reach: backward leaves their .grad None, yet each trainable
# parameter is the model's, its full-batch gradient is zero, and it needs its entry.
UNREACHED_PARTS = ("unused", "unused_param", "heads", "detached", "no_grad", "compared", "rare")


class PartlyReachedNet(nn.Module):
    """``body`` (Linear, Tanh, Linear) always runs; each of ``parts`` adds parameters the
    loss may not reach: a submodule never called (unused), a bare parameter never read
    (unused_param), a ModuleList of which only the first runs (heads), a gate read through
    .detach() (detached), a scale computed under no_grad (no_grad), a sign read through a
    comparison (compared), and a Linear applied only to the rows whose first input exceeds
    1 (rare: reached by the micro-batches that hold such a row, if any)."""

    def __init__(self, width: int, parts) -> None:
        super().__init__()
        self.parts = tuple(parts)
        self.body = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))
        if "unused" in self.parts:
            self.spare = nn.Linear(width, width)
        if "unused_param" in self.parts:
            self.offset = nn.Parameter(torch.randn(width))
        if "heads" in self.parts:
            self.heads = nn.ModuleList(
                [nn.Linear(width, width), nn.Linear(width, width, bias=False)]
            )
        if "detached" in self.parts:
            self.gate = nn.Parameter(torch.rand(width) + 0.5)
        if "no_grad" in self.parts:
            self.scale = nn.Parameter(torch.randn(width))
        if "compared" in self.parts:
            self.sign = nn.Parameter(torch.randn(width))
        if "rare" in self.parts:
            self.rare = nn.Linear(width, width)

    def forward(self, x):
        out = self.body(x)
        if "heads" in self.parts:
            out = self.heads[0](out)
        if "detached" in self.parts:
            out = out * self.gate.detach()
        if "no_grad" in self.parts:
            with torch.no_grad():
                s = self.scale.sigmoid() + 0.5
            out = out * s
        if "compared" in self.parts:
            out = torch.where(self.sign > 0, out, -out)
        if "rare" in self.parts:
            rows = x[:, 0] > 1.0
            if bool(rows.any()):
                out = out + torch.where(rows[:, None], self.rare(x), 0.0)
        return out


def partly_reached_net(seed: int, width: int, parts, dtype: str) -> nn.Module:
    torch.manual_seed(seed)
    return PartlyReachedNet(width, parts).to(getattr(torch, dtype))


@probe
def accumulate_partly_reached(cases):
    """accumulated_grad on partly_reached_net for each (seed, n, n_micro, width, parts,
    loss, dtype, stale) of ``cases`` (if stale, a factor as text: after a backward that
    reaches every parameter, each .grad multiplied by it): what it returned and the .grad
    it left (None where none)."""
    seen = []
    for seed, n, n_micro, width, parts, loss, dtype, stale in cases:
        model = partly_reached_net(seed, width, parts, dtype)
        batch = make_batch(n, width, seed + 1, loss, dtype)
        if stale:  # an earlier gradient in every .grad, the unreached parameters' included
            sum(p.pow(2).sum() for p in model.parameters()).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p.grad.mul_(float(stale))  # large (a diverging step) or nan
        got = ag.accumulated_grad(model, LOSSES[loss], batch, n_micro)
        grads = {k: None if p.grad is None else p.grad.clone() for k, p in model.named_parameters()}
        seen.append({"result": got, "grads": grads})
    return seen


def partly_reached_gradient(seed, n, width, parts, loss, dtype):
    """The full-batch gradient of partly_reached_net, zero for every parameter backward
    does not reach, and the names of those parameters."""
    model = partly_reached_net(seed, width, parts, dtype)
    inputs, targets = make_batch(n, width, seed + 1, loss, dtype)
    LOSSES[loss](model(inputs), targets).backward()
    unreached = sorted(k for k, p in model.named_parameters() if p.grad is None)
    want = {
        k: torch.zeros_like(p) if p.grad is None else p.grad.clone()
        for k, p in model.named_parameters()
    }
    return want, unreached


@pytest.mark.task("ch02.4")
@pytest.mark.points(2)
def test_accumulated_grad_gives_every_parameter_an_entry_reached_or_not():
    """Every trainable parameter has its entry, zero where the loss does not reach it (an unused submodule, .detach(), no_grad, a comparison, a branch no row takes), and its .grad holds no earlier gradient, however large or nan that was."""
    rng = random.Random(2404)
    cases = []
    for i in range(28):
        parts = tuple(rng.sample(UNREACHED_PARTS, rng.randint(1, 4)))
        if i < len(UNREACHED_PARTS):
            parts = (UNREACHED_PARTS[i],)  # each part alone once
        n = rng.randint(1, 12)
        n_micro = rng.randint(1, n + 2)
        loss = rng.choice(["mse", "cross_entropy"])
        dtype = rng.choice(["float32", "float64"])
        # every other case after an earlier backward, whose .grad is then scaled: as it was,
        # by 1e6 (a diverging step) or to nan (a step that overflowed)
        stale = ("1", "1e6", "nan")[i // 2 % 3] if i % 2 == 0 else ""
        cases.append((3000 + i, n, n_micro, rng.randint(2, 5), parts, loss, dtype, stale))
    seen = accumulate_partly_reached(cases)
    for case, got in zip(cases, seen):
        seed, n, n_micro, width, parts, loss, dtype, stale = case
        want, unreached = partly_reached_gradient(seed, n, width, parts, loss, dtype)
        call = (
            f"accumulated_grad(model with parts {list(parts)}, {loss}, {n} examples, "
            f"n_micro={n_micro}, {dtype}"
            f"{f', after a stale backward whose .grad was scaled by {stale}' if stale else ''})"
        )
        leak = (
            f": its .grad held an earlier gradient scaled by {stale} when it was called, and "
            "whatever .grad held before must not reach the result. Removing it by arithmetic "
            "(subtracting it after accumulating, scaling it by 0) keeps float rounding the "
            "size of the stale values, or their nan (nan - nan and nan * 0 are nan): discard "
            "the stale gradients before accumulating"
            if stale not in ("", "1")
            else ""
        )
        result = got["result"]
        missing = sorted(set(want) - set(result)) if isinstance(result, dict) else sorted(want)
        assert not missing, (
            f"{call} returned no entry for {missing}"
            + (
                f" ({sorted(set(missing) & set(unreached))} not reached by the loss)"
                if unreached
                else ""
            )
            + ": backward leaves .grad None for a parameter the loss never reaches (a submodule "
            "the forward skips, a weight used through .detach(), under no_grad or only in a "
            "comparison), yet it is a trainable parameter of the model with a full-batch "
            "gradient of zero, and the result holds an entry for every trainable parameter"
        )
        extra = sorted(set(result) - set(want))
        assert not extra, f"{call} returned entries {extra} that are no parameters of the model"
        wrong = [k for k in want if not close({k: result[k]}, {k: want[k]})]
        assert not wrong, (
            f"{call}: the returned gradient of {wrong[0]} differs from the full-batch gradient "
            f"({judge.mismatch(result[wrong[0]], want[wrong[0]], atol=1e-6, rtol=1e-5)})"
            + (
                f": {wrong[0]} is not reached by the loss, so its full-batch gradient is zero"
                if wrong[0] in unreached
                else ""
            )
            + leak
        )
        for k, g in got["grads"].items():
            if k in unreached:
                left = g is None or (isinstance(g, torch.Tensor) and not g.any())
                assert left, (
                    f"after {call}, .grad of {k}, which the loss does not reach, still holds "
                    f"{brief(g)}: an earlier gradient is stale; clear every parameter's .grad "
                    "before accumulating (None or zeros), not only the ones backward writes to"
                )
            else:
                assert close({k: g}, {k: want[k]}), (
                    f"after {call}, .grad of {k} does not hold the full-batch gradient: leave "
                    "the accumulated gradient in .grad, ready for optimizer.step()" + leak
                )


# ---------------------------------------------------------------- every task: edits between calls
# Each function reads its arguments as they are at each call. A graph grows when the caller
# edits a non-leaf in place; a dict of parameters gains an entry; requires_grad is switched
# on; a weight, an input or a parameter is changed in place, as an optimizer step does.
# Anything kept from an earlier call (keyed by id(), an address or a version counter) is
# stale then.

STALE = (
    ": the later call answered from what an earlier call saw. Read the arguments as they "
    "are at each call; nothing kept between calls (keyed by id(), an address or the "
    "version counter) survives an edit in place"
)


@probe
def reachability_through_edits():
    """reachable_params(loss, named) for two 0-d parameters holding the same value: as
    given (loss = a * 2), after loss.add_(b * 3) (the graph now reaches b too), and after
    named["c"] = c (the dict gains an entry no path reaches)."""
    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)  # a's value: only identity tells them apart
    loss = a * 2.0
    named = {"a": a, "b": b}
    seen = [ag.reachable_params(loss, named)]
    loss.add_(b * 3.0)
    seen.append(ag.reachable_params(loss, named))
    named["c"] = torch.tensor(1.0, requires_grad=True)
    seen.append(ag.reachable_params(loss, named))
    return seen


@pytest.mark.task("ch02.1")
def test_reachable_params_follows_a_graph_and_a_dict_edited_between_calls():
    """reachable_params matches 0-d parameters of equal value by identity, and answers for the graph and the dict as they are at each call."""
    seen = reachability_through_edits()
    want = [
        ({"a": True, "b": False}, "loss = a * 2 with a and b both tensor(1.)"),
        ({"a": True, "b": True}, "the same loss after loss.add_(b * 3)"),
        ({"a": True, "b": True, "c": False}, 'the same after named["c"] = c (the same value)'),
    ]
    got, (first, what) = seen[0], want[0]
    assert got == first, (
        f"reachable_params on {what} gave {got}, expected {first}: parameters are matched by "
        "identity; `p in list` and `==` compare values, and two one-element tensors holding "
        "the same number compare equal (keep ids in a set, or compare with `is`)"
    )
    for got, (expected, what) in zip(seen[1:], want[1:]):
        assert got == expected, f"reachable_params on {what} gave {got}, expected {expected}{STALE}"


def detached_double(t):
    return t.detach() * 2.0


@probe
def cuts_through_edits():
    """find_graph_cuts(detached_double, t) with t = ones(2): as given, after
    t.requires_grad_(), after t.requires_grad_(False): the ops of each call's cuts."""
    t = torch.ones(2)
    seen = [ag.find_graph_cuts(detached_double, t)]
    t.requires_grad_()
    seen.append(ag.find_graph_cuts(detached_double, t))
    t.requires_grad_(False)
    seen.append(ag.find_graph_cuts(detached_double, t))
    return [[str(c.op) for c in found] for found in seen]


@pytest.mark.task("ch02.2")
def test_find_graph_cuts_follows_arguments_edited_between_calls():
    """find_graph_cuts looks at requires_grad as it is at each call: switched on in place, the same tensor's detach is a cut; switched off, it is not."""
    seen = cuts_through_edits()
    kinds = [len(ops) == 1 and "detach" in ops[0] for ops in seen]
    assert seen[0] == [] and kinds[1] and seen[2] == [], (
        "find_graph_cuts(lambda t: t.detach() * 2, t) on t = ones(2), then after "
        f"t.requires_grad_(), then after t.requires_grad_(False), gave {seen}; expected [], "
        f"one detach cut, []{STALE}"
    )


@probe
def first_stage_through_edits(layout):
    """first_stage(w1, x, log) on one log: as given (w1 = 0.5, x laid out in ``layout``),
    after w1 += 1 under no_grad, after x *= 2 (both in place): each output and whether it
    requires grad, d out.sum() / d w1 after the last call, and the log's entries."""
    w1 = torch.tensor(0.5, requires_grad=True)
    x = laid_out(torch.arange(1.0, 7.0).reshape(2, 3), layout)
    log = []
    outs = [ag.first_stage(w1, x, log)]
    with torch.no_grad():
        w1.add_(1.0)
    outs.append(ag.first_stage(w1, x, log))
    x.mul_(2.0)
    outs.append(ag.first_stage(w1, x, log))
    grad = None
    if isinstance(outs[-1], torch.Tensor) and outs[-1].requires_grad:
        try:  # a graph recorded by an earlier call saved x before x.mul_(2)
            outs[-1].sum().backward()
            grad = None if w1.grad is None else w1.grad.item()
        except RuntimeError as exc:
            grad = f"backward raised: {str(exc)[:150]}"
    logged = [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in log]
    return [o.detach() for o in outs], grad, logged


@pytest.mark.task("ch02.3")
def test_first_stage_follows_edits_between_calls_in_any_layout():
    """first_stage returns w1 * x for the values w1 and x hold at each call, for x transposed, strided or offset in memory, and logs a copy of each output."""
    x = torch.arange(1.0, 7.0).reshape(2, 3)
    states = [(0.5, x), (1.5, x), (1.5, 2 * x)]
    for layout in ("contiguous", "transposed", "strided", "offset"):
        with because(
            f"first_stage raised on an x[2, 3] laid out {layout}, called three times with w1 "
            "and x edited in place between calls (.view needs contiguous memory)"
        ):
            outs, grad, logged = first_stage_through_edits(layout)
        for k, (w1, xs) in enumerate(states):
            what = ["as given", "after w1 += 1", "after x *= 2"][k]
            judge.close(
                outs[k],
                w1 * xs,
                f"first_stage(w1, x, log) {what} (the same tensors, edited in place; x an "
                f"x[2, 3] laid out {layout}) must return w1 * x, of x's shape{STALE}",
                atol=1e-6,
                rtol=1e-6,
            )
        judge.number(
            grad,
            float((2 * x).sum()),
            f"d first_stage(w1, x).sum() / d w1 on the last call (x laid out {layout}): the "
            "output must be connected to w1 itself",
            rel=1e-5,
        )
        assert len(logged) == 3, (
            f"three calls on one log must append three entries, got {len(logged)}"
        )
        for k, (w1, xs) in enumerate(states):
            judge.close(
                logged[k],
                w1 * xs,
                f"log[{k}]: each call appends a copy of its own output (x laid out {layout}); a "
                "later call must not change what an earlier one logged",
                atol=1e-6,
                rtol=1e-6,
            )


@probe
def accumulate_through_edits(seed, n, n_micro, width):
    """accumulated_grad on small_model(seed) and make_batch(n, width, seed + 1): as given,
    after the first layer's weight is negated in place, after inputs += 1 in place: each
    call's result."""
    model = small_model(seed, width, "tanh")
    batch = make_batch(n, width, seed + 1)
    loss = nn.functional.mse_loss
    seen = [ag.accumulated_grad(model, loss, batch, n_micro)]
    with torch.no_grad():
        model[0].weight.mul_(-1.0)
    seen.append(ag.accumulated_grad(model, loss, batch, n_micro))
    batch[0].data.add_(1.0)
    seen.append(ag.accumulated_grad(model, loss, batch, n_micro))
    return seen


def edited_full_batch_grads(seed, n, width):
    """The full-batch gradients of the three states accumulate_through_edits calls in."""
    model = small_model(seed, width, "tanh")
    inputs, targets = make_batch(n, width, seed + 1)
    out = []
    for k in range(3):
        if k == 1:
            with torch.no_grad():
                model[0].weight.mul_(-1.0)
        if k == 2:
            inputs = inputs + 1.0
        model.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(inputs), targets).backward()
        out.append({name: p.grad.clone() for name, p in model.named_parameters()})
    return out


@pytest.mark.task("ch02.4")
def test_accumulated_grad_follows_a_model_and_batch_edited_between_calls():
    """accumulated_grad gives the full-batch gradient of the weights and batch as they are at each call, after in-place edits of both."""
    seen = accumulate_through_edits(51, 7, 3, 3)
    for k, (got, want) in enumerate(zip(seen, edited_full_batch_grads(51, 7, 3))):
        what = ["as given", "after model[0].weight.mul_(-1)", "after inputs.data.add_(1)"][k]
        assert close(got, want), (
            f"accumulated_grad(model, mse_loss, 7 examples, n_micro=3) {what} (the same model "
            f"and batch, edited in place) returned {brief(got)}, not that state's full-batch "
            f"gradient{STALE}"
        )


ACCUMULATE_LAYOUTS = ["transposed", "strided", "offset"]


@probe
def accumulate_in_layouts(seed, n, n_micro, width, loss):
    """accumulated_grad on small_model(seed) with make_batch's inputs and targets laid out
    in each of ACCUMULATE_LAYOUTS: {layout: what it returned}."""
    inputs, targets = make_batch(n, width, seed + 1, loss)
    seen = {}
    for layout in ACCUMULATE_LAYOUTS:
        model = small_model(seed, width, "tanh")
        batch = (laid_out(inputs, layout), laid_out(targets, layout))
        seen[layout] = ag.accumulated_grad(model, LOSSES[loss], batch, n_micro)
    return seen


@pytest.mark.task("ch02.4")
def test_accumulated_grad_with_a_batch_in_any_layout():
    """A batch whose inputs and targets are transposed, strided or offset in memory gives the same full-batch gradient."""
    for loss, n, n_micro in (("mse", 9, 4), ("cross_entropy", 8, 3)):
        want = full_batch_grad(61, n, 62, width=4, loss=loss)
        with because(
            f"accumulated_grad raised on a {loss} batch laid out transposed, strided or offset: "
            ".view needs contiguous memory (tensor_split and indexing work on any layout)"
        ):
            seen = accumulate_in_layouts(61, n, n_micro, 4, loss)
        for layout, got in seen.items():
            assert close(got, want), (
                f"accumulated_grad(model, {loss}, {n} examples, n_micro={n_micro}) with the "
                f"batch laid out {layout} (harness.layouts) returned {brief(got)}, not the "
                "full-batch gradient it gives for contiguous tensors: read the batch by its "
                "shape, not its memory"
            )


class _ReadOnlyNames(Mapping):
    """A Mapping that is not a dict: iterating it yields the names only."""

    def __init__(self, pairs):
        self._pairs = list(pairs)

    def __getitem__(self, key):
        for name, p in self._pairs:
            if name == key:
                return p
        raise KeyError(key)

    def __iter__(self):
        return (name for name, _ in self._pairs)

    def __len__(self):
        return len(self._pairs)


NAMED_FORMS = {  # every form the signature allows, each built from the same (name, tensor) pairs
    "dict": dict,
    "OrderedDict": collections.OrderedDict,
    "types.MappingProxyType": lambda pairs: types.MappingProxyType(dict(pairs)),
    "a collections.abc.Mapping that is not a dict": _ReadOnlyNames,
    "a list of pairs": list,
    "a tuple of pairs": tuple,
    "a generator of pairs": lambda pairs: (pair for pair in pairs),
    "zip(names, tensors)": lambda pairs: zip([n for n, _ in pairs], [p for _, p in pairs]),
}


@probe
def reachability_given_as(form, empty=False):
    """reachable_params(loss, named) with named in ``form``: loss = b * 2 + d.sum(), names
    of two letters (a name unpacked as a pair still splits) in the order bb, aa, dd, cc;
    with ``empty``, the same loss and no pairs at all."""
    a, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    c, d = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    loss = (b * 2).sum() + d.sum()
    pairs = [] if empty else [("bb", b), ("aa", a), ("dd", d), ("cc", c)]
    return list(ag.reachable_params(loss, NAMED_FORMS[form](pairs)).items())


@pytest.mark.task("ch02.1")
def test_reachable_params_takes_every_mapping_and_every_iterable_of_pairs():
    """named_params is any Mapping[str, Tensor] or any iterable of (name, tensor) pairs, an empty one included."""
    want = [("bb", True), ("aa", False), ("dd", True), ("cc", False)]
    for form in NAMED_FORMS:
        check_reachability_given_as(form, want)
    for form in ("dict", "a list of pairs", "a generator of pairs"):  # and nothing to name
        check_reachability_given_as(form, [], empty=True)


def check_reachability_given_as(form, want, empty=False):
    given = f"an empty {form}" if empty else form
    nothing = (
        " (a model without parameters, or a filter that kept none, names nothing: the answer "
        "is {}, so nothing may assume there is a first pair to unzip or to read a device or "
        "dtype from)"
        if empty
        else ""
    )
    with because(
        f"reachable_params(loss, named) raised with named given as {given}: the signature "
        "takes any Mapping (test isinstance(named, collections.abc.Mapping), not dict) or any "
        f"iterable of (name, tensor) pairs, which may be read only once{nothing}"
    ):
        got = reachability_given_as(form, empty)
    assert got == want, (
        f"reachable_params(loss = (b*2).sum() + d.sum(), named) with named given as {given} "
        f"gave {got}, expected {want} in the order given: a Mapping's items() are the "
        f"pairs (iterating a Mapping yields its keys only); an iterable of pairs is read once"
        f"{nothing}"
    )
