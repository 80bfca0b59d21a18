"""Hidden tests for ch08: other failures, sizes and seeds than the public ones, each
finding probed near its own threshold, and overfit_one_batch compared with the
reference. Messages state the property, not the test."""

import copy
import math
import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from exercises.ch08.test_debugging import (  # helpers shared with the public twin
    checked,
    codes,
    finding_problem,
    mlp,
    overfitted,
    pretrained,
    transfer_setup,
    where,
)
from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module, reference_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief, first_difference
    from harness.generated import example, examples, given, st
except ImportError:  # (probes never use them)
    pass

dbg = chapter_module("ch08", "debugging")
ref = reference_module("ch08", "debugging")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "Dead DeepFeatures Detached FixedDirection InfGradLoss InfiniteGradient Phased RECORDED RecordingSGD SETUPS "
    "Scripted Softmaxed SquaredError ZeroGradBeforeStep books_bug_parts books_setup_in_full "
    "constant_line counts_regression dead_parameter detached_layer everything_frozen frozen_twin healthy_adam "
    "healthy_regression infinite_gradient infinite_lr linear_probe mlp overflow phased pretrained "
    "probability_like scripted shuffled_labels softmax_fed_to_cross_entropy tiny_lr true_labels "
    "zero_grad_before_step zero_lr zero_lr_head_only NONFINITE_RUNS Scaled Shifted normed_mlp "
    "left_with_gradients nonfinite_run used_by_the_caller typed_batch IDENTITY_CASES held_by_value "
    "normed_caller Weighted OutputIsLoss REDUCTION_CASES reduction_run SideBranch side_branch_run named_optimizer drawn_batch Rows rows_run "
    "ClassesFirst overfit_model PoisonGrad POISON_NAMES Poisoned poisoned_run stateful_dead "
    "local_class_setup"
)


def linear_probe(seed, d_in=8, n_classes=4):
    torch.manual_seed(seed)
    return nn.Linear(d_in, n_classes)


class ZeroGradBeforeStep(torch.optim.SGD):
    """The loop bug `backward(); zero_grad(); step()`, folded into the optimizer's step."""

    def step(self, closure=None):
        self.zero_grad()
        return super().step(closure)


class Detached(nn.Module):
    """A first layer whose output is detached before the head sees it."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)).detach())


class Phased(nn.Module):
    """`early` is used only while `main` still has its initial weights (the first step);
    `late` only once `main` has moved (every later step)."""

    def __init__(self):
        super().__init__()
        self.main = nn.Linear(8, 4)
        self.early = nn.Parameter(torch.zeros(4))
        self.late = nn.Parameter(torch.zeros(4))
        self.start = self.main.weight.detach().clone()  # a plain attribute: copied along

    def forward(self, x):
        out = self.main(x)
        if judge.is_equal(self.main.weight.detach(), self.start):
            return out + self.early
        return out + self.late


class InfiniteGradient(torch.autograd.Function):
    """The identity forward, a gradient of +inf backward."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return torch.full_like(grad, float("inf"))


class InfGradLoss:
    """Cross-entropy whose gradient is +inf everywhere (the loss itself stays finite)."""

    def __call__(self, out, y):
        return F.cross_entropy(InfiniteGradient.apply(out), y)


class Scripted:
    """A loss that takes the given values, one per call (the last repeats), with a zero
    gradient for every parameter."""

    def __init__(self, values):
        self.values, self.calls = list(values), 0

    def __call__(self, out, y):
        value = self.values[min(self.calls, len(self.values) - 1)]
        self.calls += 1
        return (out * 0).sum() + torch.tensor(value, dtype=out.dtype)


RECORDED = []  # what RecordingSGD saw, reset by each probe that uses it


class RecordingSGD(torch.optim.SGD):
    """SGD that records, at every step(), the gradient of each parameter it holds."""

    def step(self, closure=None):
        RECORDED.append(
            [
                None if p.grad is None else p.grad.detach().clone()
                for p in self.param_groups[0]["params"]
            ]
        )
        return super().step(closure)


class Softmaxed(nn.Module):
    """A linear layer followed by a transformation of its rows (see PROBABILITY_CASES)."""

    def __init__(self, how):
        super().__init__()
        self.lin = nn.Linear(8, 1 if how == "one-column softmax" else 10)
        self.how = how

    def forward(self, x):
        z = self.lin(x) * 6  # large logits: softmax rows do not sum to exactly 1 in float32
        if self.how in ("softmax", "one-column softmax"):
            return torch.softmax(z, dim=1)
        if self.how == "saturated softmax":
            return torch.softmax(z * 30, dim=1)  # many entries exactly 0
        if self.how == "twice softmax":
            return 2 * torch.softmax(z, dim=1)
        p = torch.softmax(z, dim=1)
        if self.how == "later rows doubled":
            return torch.cat([p[:1], 2 * p[1:]])  # only the first row is a distribution
        if self.how == "first row logits":
            return torch.cat([z[:1], p[1:]])  # every row but the first is a distribution
        if self.how == "row sums 0.5 and 1.5":  # non-negative; the sums average 1
            return p * torch.tensor([0.5, 1.5]).repeat(len(p))[: len(p), None]
        shift = torch.zeros(z.shape[1])
        shift[0], shift[1] = 0.05, -0.05  # rows still sum to 1; small entries turn negative
        if self.how == "last row shifted":
            return torch.cat([p[:-1], p[-1:] + shift])
        return p + shift


class Rows(nn.Module):
    """A linear layer followed by a transformation of its [N, C] rows (ROW_WAYS), each row
    multiplied by its entry of ``scales`` where the way says so."""

    def __init__(self, how, n_classes, temperature, scales):
        super().__init__()
        self.lin = nn.Linear(
            8, n_classes + (how == "softmax over one class more, that one dropped")
        )
        self.how, self.temperature = how, temperature
        self.scales = torch.tensor(scales)  # a plain attribute: one factor per row

    def forward(self, x):
        z, how = self.lin(x) * self.temperature, self.how
        if how == "softmax":
            return torch.softmax(z, dim=1)
        if how == "sigmoids divided by their row's sum":
            s = torch.sigmoid(z)
            return s / s.sum(dim=1, keepdim=True)
        if how == "sigmoid":
            return torch.sigmoid(z)
        if how == "softmax over the batch":
            return torch.softmax(z, dim=0)
        if how == "softmax over one class more, that one dropped":
            return torch.softmax(z, dim=1)[:, :-1]
        if how == "log_softmax":  # log-probabilities: cross_entropy of them is legal
            return torch.log_softmax(z, dim=1)
        if how == "softmax negated":  # rows of entries <= 0 whose magnitudes sum to 1
            return -torch.softmax(z, dim=1)
        return torch.softmax(z, dim=1) * self.scales.to(z.dtype)[:, None]  # "softmax rows scaled"


ROW_WAYS = (  # how the rows are made, and whether they are probability rows
    ("softmax", True),
    ("sigmoids divided by their row's sum", True),
    ("sigmoid", False),
    ("softmax over the batch", False),
    ("softmax over one class more, that one dropped", False),
    ("softmax rows scaled", False),
    ("log_softmax", False),
    ("softmax negated", False),
)
NEGATIVE_WAYS = ("log_softmax", "softmax negated")  # rows of entries <= 0


def row_cases(seed, per_way):
    """``per_way`` seeded draws per ROW_WAYS entry: (how, seed, n, n_classes, temperature,
    row scales, labels' dtype, model dtype); a square n == n_classes about every third draw,
    and for scaled rows one row, every other row or every row off 1: every second draw by a
    factor within half a percent of 1 (far beyond float rounding, within a loose tolerance)."""
    rng = random.Random(seed)
    cases = []
    for how, _ in ROW_WAYS:
        for k in range(per_way):
            c = rng.randint(2, 6)
            n = c if rng.random() < 0.35 else rng.randint(1, 12)
            f = rng.choice([0.995, 0.998, 1.002, 1.005] if k % 2 == 0 else [0.5, 0.8, 0.95, 1.25])
            pattern = ("one row", "every other row", "every row")[k % 3]
            if pattern == "one row":
                at = rng.randrange(n)
                scales = [f if i == at else 1.0 for i in range(n)]
            elif pattern == "every other row":  # 1 - d and 1 + d: the sums average 1
                scales = [1.0 - abs(1.0 - f) * (-1) ** i for i in range(n)]
            else:
                scales = [f] * n
            cases.append(
                (
                    how,
                    rng.randrange(10_000),
                    n,
                    c,
                    rng.choice([0.1, 1.0, 4.0]),
                    scales,
                    rng.choice(["int64", "uint8"]),
                    rng.choice(["float32", "float64"]),
                )
            )
    return cases


def rows_run(case):
    """One row_cases entry as diagnose's arguments (2 steps of SGD on cross-entropy)."""
    how, seed, n, c, temperature, scales, labels, dtype = case
    torch.manual_seed(seed)
    model = Rows(how, c, temperature, scales).to(getattr(torch, dtype))
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(n, 8, generator=g, dtype=getattr(torch, dtype))
    y = torch.randint(0, c, (n,), generator=g).to(getattr(torch, labels))
    return model, torch.optim.SGD(model.parameters(), lr=0.1), F.cross_entropy, (x, y), 2


@probe
def rows_diagnosed(cases):
    """For each case, diagnose on rows_run(case), and the untrained model's outputs (seen
    beside the model, before the call)."""
    seen = []
    for case in cases:
        model, *rest = rows_run(case)
        with torch.no_grad():
            out = model(rest[2][0]).detach().clone()
        seen.append((dbg.diagnose(model, *rest), out))
    return seen


# ---------------------------------------------------------------- setups


def books_bug_parts():
    torch.manual_seed(74)
    model = dbg.TransferNet()
    for p in model.features.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.head = nn.Linear(32, 4)
    return model, opt


def books_setup_in_full():
    torch.manual_seed(23)
    model = dbg.TransferNet()
    for p in model.features.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.head = nn.Linear(32, 4)
    return model, opt, F.cross_entropy, dbg.make_task(64, seed=24)


def zero_lr():
    model = pretrained(25)
    return (
        model,
        torch.optim.SGD(model.parameters(), lr=0.0),
        F.cross_entropy,
        dbg.make_task(64, seed=26),
    )


def zero_lr_head_only():
    model = pretrained(45)
    opt = torch.optim.SGD(
        [{"params": model.features.parameters()}, {"params": model.head.parameters(), "lr": 0.0}],
        lr=0.1,
    )
    return model, opt, F.cross_entropy, dbg.make_task(64, seed=46)


def tiny_lr():
    """Parameters between 0.5 and 1.5 stepped at lr 3e-6: every one changes, by less than
    torch.allclose's default tolerance."""
    model = linear_probe(47)
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(0.5, 1.5)
    return (
        model,
        torch.optim.SGD(model.parameters(), lr=3e-6),
        F.cross_entropy,
        dbg.make_task(64, seed=48),
    )


def zero_grad_before_step():
    model = pretrained(27)
    opt = ZeroGradBeforeStep(model.parameters(), lr=0.1)
    return model, opt, F.cross_entropy, dbg.make_task(64, seed=28)


def shuffled_labels():
    model = linear_probe(30)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    return model, opt, F.cross_entropy, dbg.make_task(512, seed=29, shuffle_labels=True)


def true_labels():
    model = linear_probe(30)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    return model, opt, F.cross_entropy, dbg.make_task(512, seed=29)


def softmax_fed_to_cross_entropy():
    model = nn.Sequential(pretrained(31), nn.Softmax(dim=1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, opt, F.cross_entropy, dbg.make_task(128, seed=32)


def detached_layer():
    torch.manual_seed(33)
    model = Detached()
    return (
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        F.cross_entropy,
        dbg.make_task(64, seed=34),
    )


def overflow():
    model = pretrained(35)
    x, y = dbg.make_task(64, seed=36)
    return model, torch.optim.SGD(model.parameters(), lr=100.0), F.cross_entropy, (x * 100, y)


def everything_frozen():
    model = pretrained(37)
    for p in model.parameters():
        p.requires_grad_(False)
    return (
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        F.cross_entropy,
        dbg.make_task(64, seed=38),
    )


def phased():
    torch.manual_seed(49)
    model = Phased()
    return (
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        F.cross_entropy,
        dbg.make_task(64, seed=50),
    )


def infinite_gradient():
    model = linear_probe(51)
    return (
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        InfGradLoss(),
        dbg.make_task(32, seed=52),
    )


def infinite_lr():
    model = linear_probe(53)
    opt = torch.optim.SGD(model.parameters(), lr=float("inf"))
    return model, opt, F.cross_entropy, dbg.make_task(32, seed=54)


def healthy_adam():
    model = mlp(55)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    return model, opt, F.cross_entropy, dbg.make_task(128, seed=56)


def healthy_regression():
    model = mlp(57, d_in=4, d_out=3)
    g = torch.Generator().manual_seed(58)
    x = torch.randn(64, 4, generator=g)
    y = torch.tanh(x @ torch.randn(4, 3, generator=g))
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), F.mse_loss, (x, y)


class SquaredError:
    """Mean squared error against integer targets (they promote to float)."""

    def __call__(self, out, y):
        return ((out - y) ** 2).mean()


def counts_regression():
    """A one-output regression ([N] outputs) onto integer counts."""
    torch.manual_seed(71)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1), nn.Flatten(0))
    g = torch.Generator().manual_seed(72)
    x = torch.randn(64, 4, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long() * 2
    return model, torch.optim.SGD(model.parameters(), lr=0.05), SquaredError(), (x, y)


def frozen_twin():
    """Two layers of the same shapes; the first frozen and left out of the optimizer."""
    torch.manual_seed(69)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 4))
    model[0].requires_grad_(False)
    opt = torch.optim.Adam([*model[2].parameters(), *model[4].parameters()], lr=0.03)
    return model, opt, F.cross_entropy, dbg.make_task(128, seed=70)


def probability_like(how, targets, n=128):
    torch.manual_seed(59)
    model = Softmaxed(how)
    x, y = dbg.make_task(n, seed=60, n_classes=10)
    if how == "one-column softmax":
        y = torch.zeros_like(y)
    loss_fn = F.cross_entropy
    if targets == "uint8":  # labels in the one narrower integer type cross_entropy takes
        y = y.to(torch.uint8)
    elif targets != "int":  # "float" (float32) or a floating dtype's name
        dtype = torch.float32 if targets == "float" else getattr(torch, targets)
        y, loss_fn = F.one_hot(y, 10).to(dtype), F.mse_loss
    return model, torch.optim.SGD(model.parameters(), lr=0.1), loss_fn, (x, y)


def scripted(values, labels, float_targets=False, dtype=None):
    """A linear model over 8 features fed a Scripted loss, on the given labels (int64, or
    the integer ``dtype``) or their one-hot rows (float32, or the floating ``dtype``)."""
    n_classes = max(labels) + 1
    model = linear_probe(61, n_classes=max(n_classes, 2))
    x = torch.randn(len(labels), 8, generator=torch.Generator().manual_seed(62))
    y = torch.tensor(labels)
    if float_targets:
        y = F.one_hot(y, max(n_classes, 2)).float()
    if dtype is not None:
        y = y.to(getattr(torch, dtype))
    return model, torch.optim.SGD(model.parameters(), lr=0.1), Scripted(values), (x, y)


def constant_line():
    model = linear_probe(63)
    for p in model.parameters():
        nn.init.zeros_(p)
    x = torch.randn(32, 8, generator=torch.Generator().manual_seed(64))
    c = torch.randn(32, 4, generator=torch.Generator().manual_seed(65))
    return (
        model,
        RecordingSGD(model.parameters(), lr=0.01),
        FixedDirection(c),
        (x, torch.zeros(32, 4)),
    )


class FixedDirection:
    """sum(out * c): a loss whose gradient with respect to a linear model never changes."""

    def __init__(self, c):
        self.c = c

    def __call__(self, out, y):
        return (out * self.c).sum()


def used_by_the_caller(dtype):
    """A model and optimizer in the state a caller's own run leaves them: the first layer
    frozen, Adam holding two steps of state for the last layer, a .grad left in every
    parameter by a last backward, the model in eval mode but for its last layer."""
    model = mlp(75).to(dtype)
    g = torch.Generator().manual_seed(76)
    x, y = torch.randn(32, 8, generator=g, dtype=dtype), torch.randint(0, 4, (32,), generator=g)
    opt = torch.optim.Adam(model[2].parameters(), lr=1e-2)
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    model[0].requires_grad_(False)
    F.cross_entropy(model(x), y).backward()
    model.eval()
    model[2].train()
    return model, opt, F.cross_entropy, (x, y)


def stateful_dead(optimizer):
    """Dead (its ``dead`` gets exact-zero gradients) with an optimizer (named_optimizer) that
    has already taken two steps on gradients of ones: momentum or Adam's moments still move
    ``dead`` on every later step, though its gradient is zero."""
    torch.manual_seed(88)
    model = Dead()
    opt = named_optimizer(optimizer, list(model.parameters()))
    for _ in range(2):
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        opt.step()
    opt.zero_grad()
    g = torch.Generator().manual_seed(89)
    x, y = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g)
    return model, opt, F.mse_loss, (x, y)


class Scaled:
    """``base`` times ``factor`` on the call numbered ``at`` (on every call when None)."""

    def __init__(self, base, factor, at=None):
        self.base, self.factor, self.at, self.calls = base, factor, at, 0

    def __call__(self, out, y):
        loss, k = self.base(out, y), self.calls
        self.calls += 1
        return loss * self.factor if self.at in (None, k) else loss


class Shifted:
    """``base`` plus ``shift``: the loss moves, the gradients stay those of ``base``."""

    def __init__(self, base, shift):
        self.base, self.shift = base, shift

    def __call__(self, out, y):
        return self.base(out, y) + self.shift


NONFINITE_RUNS = {  # name -> (seed, labels?, loss_fn factory, steps)
    "MSE + inf at every step": (80, False, lambda: Shifted(F.mse_loss, math.inf), 3),
    "MSE x inf at every step": (81, False, lambda: Scaled(F.mse_loss, math.inf), 3),
    "MSE x nan at step 1 of 4": (82, False, lambda: Scaled(F.mse_loss, math.nan, at=1), 4),
    "MSE x inf at step 2 of 4": (83, False, lambda: Scaled(F.mse_loss, math.inf, at=2), 4),
    "cross-entropy x inf at every step": (0, True, lambda: Scaled(F.cross_entropy, math.inf), 2),
}


def nonfinite_run(name):
    """NONFINITE_RUNS[name] as diagnose's arguments: an MLP with a RecordingSGD, on float
    targets (a regression) or on labels."""
    seed, labels, loss_fn, steps = NONFINITE_RUNS[name]
    g = torch.Generator().manual_seed(seed + 1)
    if labels:
        model = mlp(seed)
        x = torch.randn(16, 8, generator=g)
        y = torch.randint(0, 4, (16,), generator=g)
    else:
        model = mlp(seed, d_in=4, d_out=3)
        x = torch.randn(32, 4, generator=g)
        y = torch.tanh(x @ torch.randn(4, 3, generator=g))
    return model, RecordingSGD(model.parameters(), lr=0.1), loss_fn(), (x, y), steps


class Weighted(nn.Module):
    """sum(w * x) over one row x: the gradient of ``w`` is ``x`` itself."""

    def __init__(self, values):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(values))

    def forward(self, x):
        return (self.w * x).sum()


class OutputIsLoss:
    """The model's output is the loss (the targets are ignored)."""

    def __call__(self, out, y):
        return out


REDUCTION_CASES = {  # name -> (w, x, lr): every entry finite, a reduction over them is not
    "gradients +-1e20 (their norm overflows float32), lr 1e-30": (
        [1.0, 1.0],
        [1e20, -1e20],
        1e-30,
    ),
    "gradients 3e38 (their sum overflows float32), lr 0": ([1.0, 1.0], [3e38, 3e38], 0.0),
    "parameters 3e38 (their sum and norm overflow float32), lr 1e-45": (
        [3e38, 3e38],
        [1e-30, 1e-30],
        1e-45,
    ),
    "parameters 1e-20 moved by 1e-25 (the change's norm underflows to 0)": (
        [1e-20, 1e-20],
        [1.0, 1.0],
        1e-25,
    ),
}


def reduction_run(name):
    """REDUCTION_CASES[name] as diagnose's arguments for one SGD step."""
    w, x, lr = REDUCTION_CASES[name]
    model = Weighted(w)
    return (
        model,
        torch.optim.SGD(model.parameters(), lr=lr),
        OutputIsLoss(),
        (
            torch.tensor(x),
            torch.zeros(()),
        ),
        1,
    )


class PoisonGrad(torch.autograd.Function):
    """The identity forward; backward gives its input ``value`` (inf, -inf or nan) in every
    entry of the gradient, or in its first entry only."""

    @staticmethod
    def forward(ctx, t, value, whole):
        ctx.value, ctx.whole = value, whole
        return t.view_as(t)

    @staticmethod
    def backward(ctx, grad):
        if ctx.whole:
            return torch.full_like(grad, ctx.value), None, None
        grad = grad.clone()
        grad.view(-1)[0] = ctx.value
        return grad, None, None


POISON_NAMES = ("body.0.weight", "body.0.bias", "head.weight", "head.bias", "scale")


class Poisoned(nn.Module):
    """Linear -> Tanh -> Linear, times a bare top-level ``scale``: backward poisons, on every
    step, the gradient of each parameter named in ``poison`` (name -> (value, whole))."""

    def __init__(self, d_in, hidden, d_out, poison):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh())
        self.head = nn.Linear(hidden, d_out)
        self.scale = nn.Parameter(torch.ones(d_out))
        self.poison = dict(poison)

    def forward(self, x):
        params = dict(self.named_parameters())

        def use(name):
            t = params[name]
            if name in self.poison and t.requires_grad:
                return PoisonGrad.apply(t, *self.poison[name])
            return t

        h = torch.tanh(F.linear(x, use("body.0.weight"), use("body.0.bias")))
        return F.linear(h, use("head.weight"), use("head.bias")) * use("scale")


def poisoned_cases(seed, count):
    """``count`` seeded setups whose backward makes some gradients inf or nan while the loss
    stays finite: (seed, d_in, hidden, d_out, frozen body?, held names, poison, optimizer,
    labels?, steps). In every other case only parameters the optimizer does not hold (while
    they require grad) are poisoned."""
    rng = random.Random(seed)
    cases = []
    for i in range(count):
        frozen = rng.random() < 0.3
        trainable = [n for n in POISON_NAMES if not (frozen and n.startswith("body."))]
        if i % 4 == 3:
            held = list(trainable)  # the optimizer holds every trainable parameter
        else:
            held = rng.sample(trainable, rng.randint(1, len(trainable) - 1))
        free = [n for n in trainable if n not in held]
        pool = free if i % 2 == 0 and free else trainable
        poison = {
            n: (rng.choice([math.inf, -math.inf, math.nan]), rng.random() < 0.5)
            for n in rng.sample(pool, rng.randint(1, min(2, len(pool))))
        }
        cases.append(
            (
                rng.randrange(10_000),
                rng.choice([2, 3, 5]),
                rng.choice([3, 4]),
                rng.choice([2, 3]),
                frozen,
                sorted(held),
                poison,
                rng.choice(["SGD", "SGD momentum", "Adam"]),
                rng.random() < 0.5,
                rng.randint(1, 3),
            )
        )
    return cases


def named_optimizer(name, params):
    """ "SGD", "SGD momentum" (0.9) or "Adam" over ``params``, at the rates these cases use."""
    if name == "Adam":
        return torch.optim.Adam(params, lr=1e-2)
    return torch.optim.SGD(params, lr=0.1, momentum=0.9 if name == "SGD momentum" else 0.0)


def drawn_batch(n, d_in, d_out, labels, g):
    """x [n, d_in] from ``g``, then class labels below d_out with cross-entropy, or real
    targets [n, d_out] with mean squared error: ((x, y), loss_fn)."""
    x = torch.randn(n, d_in, generator=g)
    if labels:
        return (x, torch.randint(0, d_out, (n,), generator=g)), F.cross_entropy
    return (x, torch.randn(n, d_out, generator=g)), F.mse_loss


def poisoned_run(case):
    """One poisoned_cases entry as diagnose's arguments."""
    seed, d_in, hidden, d_out, frozen, held, poison, optimizer, labels, steps = case
    torch.manual_seed(seed)
    model = Poisoned(d_in, hidden, d_out, poison)
    if frozen:
        model.body.requires_grad_(False)
    params = dict(model.named_parameters())
    opt = named_optimizer(optimizer, [params[n] for n in held])
    batch, loss_fn = drawn_batch(10, d_in, d_out, labels, torch.Generator().manual_seed(seed + 1))
    return model, opt, loss_fn, batch, steps


@probe
def poisoned_diagnosed(cases):
    """diagnose on poisoned_run(case) for each case."""
    return [dbg.diagnose(*poisoned_run(case)) for case in cases]


@probe
def reduction_diagnosed(name):
    """diagnose on reduction_run(name)."""
    return dbg.diagnose(*reduction_run(name))


class Dead(nn.Module):
    """A linear layer plus ``0 * dead``: backward gives ``dead`` a gradient of exact zeros."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.dead = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return self.lin(x) + 0 * self.dead


def dead_parameter():
    torch.manual_seed(86)
    model = Dead()
    g = torch.Generator().manual_seed(87)
    x, y = torch.randn(6, 2, generator=g), torch.randn(6, 2, generator=g)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), F.mse_loss, (x, y)


class SideBranch(nn.Module):
    """A linear model plus a side Linear whose contribution (``how``, one of SIDE_WAYS)
    decides what backward gives the side's parameters: exact zeros, zeros in part, zeros on
    some steps only, or nothing at all (.grad stays None)."""

    def __init__(self, how, d_in, n_out, bias):
        super().__init__()
        self.main = nn.Linear(d_in, n_out)
        self.side = nn.Linear(d_in, n_out, bias=bias)
        self.how = how
        self.start = self.main.weight.detach().clone()  # plain attributes: copied along
        self.gate = (torch.arange(n_out) % 2).float()  # output 0, 2, ... gated off

    def forward(self, x):
        out, how = self.main(x), self.how
        first = judge.is_equal(self.main.weight.detach(), self.start)  # the first step
        if how == "times zero":
            return out + 0 * self.side(x)
        if how == "fed zeros":  # weight: a gradient of zeros; bias: a real one
            return out + self.side(x * 0)
        if how == "behind a dead ReLU":
            return out + torch.relu(self.side(x) - 1e4)
        if how == "in the unselected branch of a where":
            return out + torch.where(torch.zeros_like(out, dtype=torch.bool), self.side(x), 0)
        if how == "half its outputs gated off":  # some gradient entries zero, others not
            return out + self.side(x) * self.gate
        if how == "times zero on the first step only":
            return out + self.side(x) * (0.0 if first else 1.0)
        if how == "times zero on the first step, unused later":
            return out + 0 * self.side(x) if first else out
        if how == "detached":
            return out + self.side(x).detach()
        if how == "the whole output detached":  # the loss has no graph; every parameter trains
            return (out + self.side(x)).detach()
        if how == "the whole output computed under no_grad":
            with torch.no_grad():
                return self.main(x) + self.side(x)
        return out  # "unused"


SIDE_WAYS = (
    "times zero",
    "fed zeros",
    "behind a dead ReLU",
    "in the unselected branch of a where",
    "half its outputs gated off",
    "times zero on the first step only",
    "times zero on the first step, unused later",
    "detached",
    "unused",
    "the whole output detached",
    "the whole output computed under no_grad",
)
NO_GRAPH_WAYS = SIDE_WAYS[-2:]  # the output, so the loss, has no graph at all


def side_branch_cases(seed, per_way):
    """``per_way`` seeded draws per SIDE_WAYS entry: (how, seed, d_in, n_out, bias, labels,
    optimizer, steps, held); ``held`` is "all" (the optimizer holds every parameter) or, for
    every second draw of a way, "main" (the side Linear is trainable but left out of it)."""
    rng = random.Random(seed)
    return [
        (
            how,
            rng.randrange(10_000),
            rng.choice([3, 8]),
            rng.choice([2, 3, 4]),
            rng.random() < 0.7,
            rng.random() < 0.5,
            rng.choice(["SGD", "SGD momentum", "Adam"]),
            rng.randint(1, 4),
            "main" if draw % 2 else "all",
        )
        for how in SIDE_WAYS
        for draw in range(per_way)
    ]


def side_branch_run(case):
    """One side_branch_cases entry as diagnose's arguments."""
    how, seed, d_in, n_out, bias, labels, optimizer, steps, held = case
    torch.manual_seed(seed)
    model = SideBranch(how, d_in, n_out, bias)
    batch, loss_fn = drawn_batch(12, d_in, n_out, labels, torch.Generator().manual_seed(seed + 1))
    params = model.parameters() if held == "all" else model.main.parameters()
    return model, named_optimizer(optimizer, params), loss_fn, batch, steps


@probe
def side_branches_diagnosed(cases):
    """diagnose on side_branch_run(case) for each case."""
    return [dbg.diagnose(*side_branch_run(case)) for case in cases]


class DeepFeatures(nn.Module):
    """Extra feature layers: a Linear inside a nested Sequential and a bare Parameter."""

    def __init__(self, d_in, hidden):
        super().__init__()
        self.first = nn.Sequential(nn.Linear(d_in, 16), nn.ReLU())
        self.inner = nn.Sequential(nn.Sequential(nn.Linear(16, hidden)), nn.Tanh())
        self.scale = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return self.inner(self.first(x)) * self.scale


SETUPS = {
    "book's setup in full": books_setup_in_full,
    "lr 0": zero_lr,
    "lr 0 for the head only": zero_lr_head_only,
    "lr 3e-6": tiny_lr,
    "zero_grad before step": zero_grad_before_step,
    "shuffled labels": shuffled_labels,
    "true labels": true_labels,
    "softmax": softmax_fed_to_cross_entropy,
    "detached layer": detached_layer,
    "overflow": overflow,
    "everything frozen": everything_frozen,
    "phased": phased,
    "infinite gradient": infinite_gradient,
    "infinite lr": infinite_lr,
    "healthy Adam": healthy_adam,
    "healthy regression": healthy_regression,
    "frozen twin": frozen_twin,
    "counts regression": counts_regression,
    "book's bug": lambda: (*books_bug_parts(), F.cross_entropy, dbg.make_task(64, seed=73)),
    "constant gradient": constant_line,
    "a parameter with an exactly zero gradient": dead_parameter,
}


IDENTITY_CASES = {  # case -> (model, what the optimizer holds); value and identity disagree
    "optimizer over clones": ("mlp", "clones"),
    "1-element parameters, optimizer over clones": ("1x1", "clones"),
    "first layer cloned": ("mlp", "first cloned"),
    "optimizer over storage-sharing aliases": ("mlp", "aliases"),
    "twin layers, optimizer over the first": ("twins", "first"),
    "twin layers, the second frozen, optimizer over the first": ("twins", "first, second frozen"),
    "a weight tied across two layers, optimizer over the rest": ("tied", "all but the tie"),
    "a frozen weight tied across two layers, optimizer over all": ("tied", "all, tie frozen"),
}


def held_by_value(case):
    """A regression setup (IDENTITY_CASES) where value and identity disagree: the optimizer
    holds tensors equal to the model's parameters in shape, dtype and values (clones, or
    detached aliases of the same memory) but not the parameters themselves, or the model
    holds two layers of equal values and the optimizer only the first."""
    kind, holds = IDENTITY_CASES[case]
    torch.manual_seed(84)
    if kind == "1x1":
        model, d_in, d_out = nn.Linear(1, 1), 1, 1
    else:
        d_in, d_out = 3, 3 if kind in ("twins", "tied") else 2
        model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, d_out))
        if kind == "twins":
            model[2].load_state_dict(model[0].state_dict())
        if kind == "tied":  # one tensor registered twice: 0.weight and 2.weight
            model[2].weight = model[0].weight
    params = list(model.parameters())
    if holds == "clones":
        held = [p.detach().clone().requires_grad_() for p in params]
    elif holds == "first cloned":
        held = [p.detach().clone().requires_grad_() for p in model[0].parameters()]
        held += list(model[2].parameters())
    elif holds == "aliases":
        held = [p.detach().requires_grad_() for p in params]
    elif kind == "tied":
        tie = model[0].weight
        if holds == "all, tie frozen":
            tie.requires_grad_(False)
        held = [p for p in params if p is not tie or holds != "all but the tie"]
    else:
        if holds.endswith("frozen"):
            model[2].requires_grad_(False)
        held = list(model[0].parameters())
    g = torch.Generator().manual_seed(85)
    x, y = torch.randn(6, d_in, generator=g), torch.randn(6, d_out, generator=g)
    return model, torch.optim.SGD(held, lr=0.1), F.mse_loss, (x, y)


@probe
def diagnosed_held_by_value(case, steps):
    """diagnose on held_by_value(case)."""
    return dbg.diagnose(*held_by_value(case), steps)


@probe
def diagnosed(setup, steps):
    """diagnose on a freshly built setup (SETUPS)."""
    return dbg.diagnose(*SETUPS[setup](), steps)


@probe
def diagnosed_probability_like(how, targets, steps, n=128):
    """diagnose on a Softmaxed model (rows transformed `how`) with int or float targets, and
    whether its first output holds a negative and an exact zero (seen beside the model)."""
    setup = probability_like(how, targets, n)
    with torch.no_grad():
        out = setup[0](setup[3][0])
    return dbg.diagnose(*setup, steps), bool((out < 0).any()), bool((out == 0).any())


@probe
def diagnosed_scripted(values, labels, float_targets=False, dtype=None):
    """diagnose on a linear model whose loss takes the scripted values, one per step."""
    return dbg.diagnose(*scripted(values, labels, float_targets, dtype), len(values))


@probe
def recorded_steps(setup, steps):
    """diagnose with a RecordingSGD: the gradients each of its step() calls saw."""
    RECORDED.clear()
    findings = dbg.diagnose(*SETUPS[setup](), steps)
    return list(RECORDED), findings


@probe
def caller_after_diagnose(seed, steps):
    """The caller's model, Adam optimizer and gradients after diagnose: parameters before and
    after, whether any .grad was set, and the optimizer's state size."""
    model = mlp(seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    before = [p.detach().clone() for p in model.parameters()]
    dbg.diagnose(model, opt, F.cross_entropy, dbg.make_task(64, seed=seed + 1), steps)
    return {
        "before": before,
        "after": [p.detach().clone() for p in model.parameters()],
        "grads_set": [p.grad is not None for p in model.parameters()],
        "optimizer_state": len(opt.state),
        "steps_recorded": [int(s.get("step", 0)) for s in opt.state.values()],
    }


def normed_caller(seed):
    """A caller's model whose every forward in train mode changes it: BatchNorm1d's running
    statistics and batch count (buffers), with SGD momentum, on labels."""
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(8, 6, bias=False), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 4)
    )
    g = torch.Generator().manual_seed(seed + 1)
    x, y = torch.randn(16, 8, generator=g) * 3 + 1, torch.randint(0, 4, (16,), generator=g)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, opt, F.cross_entropy, (x, y)


@probe
def normed_caller_after_diagnose(seed, steps):
    """diagnose on normed_caller(seed): the findings, and the caller's buffers, parameters,
    modes and optimizer state before and after the call."""
    model, opt, loss_fn, batch = normed_caller(seed)

    def state():
        return {
            "buffers": {n: b.detach().clone() for n, b in model.named_buffers()},
            "parameters": {n: p.detach().clone() for n, p in model.named_parameters()},
            "training": [m.training for m in model.modules()],
            "optimizer_state": len(opt.state),
        }

    before = state()
    findings = dbg.diagnose(model, opt, loss_fn, batch, steps)
    return findings, before, state()


@pytest.mark.task("ch08.2")
def test_diagnose_leaves_the_callers_buffers_alone():
    """A caller's model with BatchNorm in train mode keeps its running statistics and batch
    count: diagnose runs every forward, a first look at the outputs included, on its copy."""
    for seed, steps in ((90, 3), (91, 0)):
        with because(f"diagnose raised on a BatchNorm model in train mode ({steps} steps)"):
            findings, before, after = normed_caller_after_diagnose(seed, steps)
        changed = [
            n for n, b in before["buffers"].items() if not judge.is_equal(after["buffers"][n], b)
        ]
        assert not changed, (
            f"diagnose(Linear -> BatchNorm1d (train mode) -> ReLU -> Linear, SGD momentum, "
            f"{steps} steps) changed the caller's buffers {changed} "
            f"(num_batches_tracked {before['buffers']['1.num_batches_tracked'].item()} -> "
            f"{after['buffers']['1.num_batches_tracked'].item()}): any forward of the caller's "
            "model in train mode updates BatchNorm's running statistics, under no_grad or "
            "inference_mode too. Deep-copy model and optimizer first and run every forward "
            "(a first look at the outputs included) on the copy"
        )
        moved = [
            n
            for n, p in before["parameters"].items()
            if not judge.is_equal(after["parameters"][n], p)
        ]
        assert not moved and after["training"] == before["training"], (
            f"diagnose on a BatchNorm model in train mode changed the caller's parameters "
            f"{moved} or modes ({before['training']} -> {after['training']}): the steps run on "
            "a copy"
        )
        assert after["optimizer_state"] == before["optimizer_state"], (
            f"diagnose left state for {after['optimizer_state']} tensors in the caller's SGD "
            "(momentum buffers): step the copy's optimizer, not the caller's"
        )
        want = finding_set(ref.diagnose(*normed_caller(seed), steps))
        assert finding_set(findings) == want, (
            f"diagnose on a healthy BatchNorm model in train mode ({steps} steps) found "
            f"{finding_set(findings)}, expected {want}"
        )


@probe
def stateful_dead_diagnosed(optimizers, steps):
    """diagnose on stateful_dead(name) for each optimizer name."""
    return [dbg.diagnose(*stateful_dead(name), steps) for name in optimizers]


@probe
def used_caller_diagnosed(dtype, steps):
    """diagnose on a model and optimizer the caller has used (used_by_the_caller): the
    findings (the harness compares the caller's objects before and after the call)."""
    return dbg.diagnose(*used_by_the_caller(dtype), steps)


@probe
def nonfinite_diagnosed(name):
    """diagnose on NONFINITE_RUNS[name]: the findings and how many step() calls it made."""
    RECORDED.clear()
    findings = dbg.diagnose(*nonfinite_run(name))
    return findings, len(RECORDED)


@probe
def heads_of_two_setups(seed):
    """build_transfer_setup on two copies of one pretrained model, one call after the other
    (the global generator not reseeded in between): each new head's weight."""
    first = pretrained(seed)
    second = copy.deepcopy(first)
    a, _ = dbg.build_transfer_setup(first)
    b, _ = dbg.build_transfer_setup(second)
    return a.head.weight.detach().clone(), b.head.weight.detach().clone()


@probe
def transfer_steps(seed, task_seed, steps):
    """build_transfer_setup of pretrained(seed), then ``steps`` training steps with the
    optimizer it returned, one at a time: for each step the head's parameters before it,
    their gradients (None where there is none) and the parameters after it."""
    model, opt = dbg.build_transfer_setup(pretrained(seed))
    x, y = dbg.make_task(32, seed=task_seed)
    trace = []
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        head = list(model.head.parameters())
        before = [p.detach().clone() for p in head]
        grads = [None if p.grad is None else p.grad.detach().clone() for p in head]
        opt.step()
        trace.append((before, grads, [p.detach().clone() for p in head]))
    return trace


@probe
def deep_features_setup(seed, kind):
    """build_transfer_setup of a pretrained TransferNet whose ``features`` is deeper than the
    default (``kind``): per feature parameter (by name) whether it requires grad, how many
    feature tensors the optimizer holds, whether every feature value survived 3 steps, and
    whether the model returned is the very model given (``given``)."""
    torch.manual_seed(seed)
    model = dbg.TransferNet(d_in=8, hidden=12, n_classes=3)
    if kind == "four layers":
        model.features = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 12), nn.ReLU())
    else:
        model.features = DeepFeatures(8, 12)
    before = {n: p.detach().clone() for n, p in model.features.named_parameters()}
    given = model
    model, opt = dbg.build_transfer_setup(model)
    ids = {id(p) for p in model.features.parameters()}
    held = sum(id(p) in ids for group in opt.param_groups for p in group["params"])
    x, y = dbg.make_task(16, seed=seed + 1, n_classes=3)
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    after = dict(model.features.named_parameters())
    return {
        "requires_grad": {n: bool(p.requires_grad) for n, p in after.items()},
        "held": held,
        "kept": sorted(before) == sorted(after)
        and all(judge.is_equal(before[n], after[n].detach()) for n in before),
        "given": model is given,
    }


def typed_batch(seed, dtype, labels, d_in=3, d_out=2, n=6):
    """x [n, d_in] in the floating dtype of the model, and float targets [n, d_out] of
    ``dtype`` or labels [n] of ``dtype``: the batch of an overfit in another dtype."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    y = torch.randint(0, d_out, (n,), generator=g) if labels else torch.randn(n, d_out, generator=g)
    wide = getattr(torch, dtype)
    return x.to(torch.float32 if labels else wide), y.to(wide)


@probe
def overfit_in_dtype(seed, dtype, labels, steps):
    """overfit_one_batch on mlp(seed) (width 8) cast to the float ``dtype`` of its targets
    (float32 when the targets are labels of the integer ``dtype``): the losses."""
    x, y = typed_batch(seed, dtype, labels)
    model = mlp(seed, d_in=3, width=8, d_out=2).to(x.dtype)
    return [float(v) for v in dbg.overfit_one_batch(model, (x, y), steps)]


@probe
def placed_setup(device, dtype):
    """build_transfer_setup of pretrained(88, hidden=6, n_classes=3) moved to ``device`` in
    ``dtype`` (meta stands for a GPU here): each parameter's device and dtype by name, and
    the device, dtype and head membership (by identity) of each tensor the optimizer holds."""
    model = pretrained(88, hidden=6, n_classes=3).to(device=device, dtype=getattr(torch, dtype))
    model, opt = dbg.build_transfer_setup(model)
    head = {id(p) for p in model.head.parameters()}
    return {
        "parameters": {n: (str(p.device), str(p.dtype)) for n, p in model.named_parameters()},
        "held": [
            (str(p.device), str(p.dtype), id(p) in head)
            for group in opt.param_groups
            for p in group["params"]
        ],
        "head_size": len(head),
    }


# ---------------------------------------------------------------- ch08.1 build_transfer_setup


@pytest.mark.task("ch08.1")
@pytest.mark.points(1)
def test_transfer_setup_for_other_sizes():
    """On other sizes the repaired setup has a fresh head of the old shape, trains it, and holds exactly it; every setup draws a new head."""
    seen = transfer_setup(21, {"d_in": 5, "hidden": 6, "n_classes": 6}, 22, 50)
    assert seen["new_head"].shape == (6, 6) and judge.differ(
        seen["new_head"], seen["old_head"], atol=0, rtol=0
    ), "the new head keeps the old head's shape and gets a fresh initialization"
    assert seen["losses"][-1] < 0.9 * seen["loss_before"], (
        "after the repair the new head must learn: the loss has to fall over 50 steps "
        f"({seen['loss_before']:.4f} -> {seen['losses'][-1]:.4f})"
    )
    assert seen["held"] == seen["held_of_head"] == seen["head_size"], (
        "the optimizer holds exactly the new head's parameters"
    )
    first, second = heads_of_two_setups(77)
    assert first.shape == second.shape and judge.differ(first, second, atol=0, rtol=0), (
        "build_transfer_setup on two copies of one pretrained model, called one after the "
        "other, gave both the same new head: a fresh head draws new weights from torch's "
        "generator, as nn.Linear(...) does when it is built. Seeding the global generator "
        "inside the function (torch.manual_seed) gives every model the same head and restarts "
        "the caller's random stream; a generator seeded with a constant repeats itself alike"
    )


@pytest.mark.task("ch08.1")
@pytest.mark.points(2)
def test_transfer_setup_is_sgd_at_lr_0_1_and_keeps_the_pretrained_features():
    """The optimizer is plain SGD at lr 0.1 (each step moves the head by -0.1 x its gradient); the pretrained features are kept (not re-initialised) and frozen, in the caller's own model, which is the one returned."""
    seen = transfer_setup(67, {"hidden": 12}, 68, 5)
    assert seen["optimizer"] == "SGD" and judge.is_number(
        seen["lrs"], [0.1] * len(seen["lrs"]), abs=1e-12, rel=1e-6
    ), (
        f"build_transfer_setup returned {seen['optimizer']} with learning rates {seen['lrs']}: "
        "the contract is SGD at lr 0.1 over the new head"
    )
    assert seen["head_trainable"] and seen["held_of_features"] == 0, (
        "the new head requires grad and no feature tensor is in the optimizer"
    )
    unchanged = all(
        judge.is_equal(a, b) for a, b in zip(seen["features_before"], seen["features_after"])
    )
    assert unchanged and all(seen["features_frozen"]), (
        "the pretrained features are kept as they were (not re-initialised, not trained) and "
        "every feature parameter has requires_grad False"
    )
    for kind in ("four layers", "nested modules and a bare Parameter"):
        deep = deep_features_setup(69, kind)
        assert deep["given"], (
            f"build_transfer_setup on a TransferNet whose features has {kind} returned another "
            "model than the one it was given: the task prepares the caller's pretrained model "
            "itself — freeze model.features, put the fresh head on that model, return it with "
            "its optimizer — not a copy (a caller who keeps training `model` would train the "
            "untouched original)"
        )
        trainable = sorted(n for n, flag in deep["requires_grad"].items() if flag)
        assert not trainable and deep["held"] == 0 and deep["kept"], (
            f"build_transfer_setup on a TransferNet whose features has {kind}: feature "
            f"parameters {trainable} still require grad, the optimizer holds {deep['held']} "
            f"feature tensors, features unchanged after 3 steps: {deep['kept']}. Freeze "
            "model.features as a whole — every parameter it holds at any depth "
            "(model.features.parameters() recurses), not only its first layer"
        )
    for k, (before, grads, after) in enumerate(transfer_steps(67, 68, 3)):
        for j, (p, g, q) in enumerate(zip(before, grads, after)):
            assert g is not None, f"step {k + 1}: the new head's parameter {j} got no gradient"
            want = p.double() - 0.1 * g.double()
            assert judge.is_close(q.double(), want, atol=1e-7, rtol=1e-6), (
                f"build_transfer_setup's optimizer, stepped 3 times on a batch: at step {k + 1} "
                f"the head's parameter {j} moved to something other than p - 0.1 * p.grad "
                f"({first_difference(q.double(), want)}). SGD at lr 0.1 is plain SGD, "
                "torch.optim.SGD's defaults: no momentum (it carries earlier steps' gradients "
                "into later ones), no weight decay, no nesterov"
            )


@pytest.mark.task("ch08.1")
def test_the_new_head_is_placed_where_the_old_one_was():
    """A pretrained model on another device (meta, standing for a GPU) or in float64 gets its new head on that device and in that dtype, and the optimizer holds those head parameters."""
    for device, dtype in (("meta", "float32"), ("meta", "float64"), ("cpu", "float64")):
        call = f"build_transfer_setup(TransferNet(hidden=6, n_classes=3).to({device!r}, {dtype}))"
        with because(f"{call} raised"):
            seen = placed_setup(device, dtype)
        want = (device, f"torch.{dtype}")
        off = {n: where_ for n, where_ in seen["parameters"].items() if where_ != want}
        assert not off, (
            f"{call}: parameters {off} are not on {device} in torch.{dtype} like the rest of "
            "the pretrained model. nn.Linear(...) builds the new head on the CPU in the "
            "default dtype: move it where the old head was, device and dtype both "
            "(.to(device=old.device, dtype=old.dtype)); a head left on the CPU cannot take a "
            "GPU model's features"
        )
        held = seen["held"]
        assert len(held) == seen["head_size"] and all(
            in_head and (d, t) == want for d, t, in_head in held
        ), (
            f"{call}: the optimizer holds {held} (device, dtype, is a head parameter), expected "
            f"the {seen['head_size']} parameters of the new head, on {device} in torch.{dtype}: "
            "build the optimizer after the head is moved (moving a module across devices may "
            "replace its Parameter objects)"
        )


# ---------------------------------------------------------------- ch08.2 diagnose


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_the_books_setup_in_full():
    """The book's setup: frozen for held frozen features, not_in_model, not_in_optimizer by identity."""
    findings = diagnosed("book's setup in full", 5)
    problem = finding_problem(findings, with_detail=True)
    assert problem is None, f"diagnose must return Finding(code, where, detail) rows: {problem}"
    assert where(findings, "frozen") == ["features.0.bias", "features.0.weight"], (
        "parameters the optimizer holds although they do not require grad are reported as frozen"
    )
    held = where(findings, "not_in_model")  # once, or once per tensor: the contract allows both
    assert held and set(held) == {"optimizer"}, (
        "tensors the optimizer holds that the model no longer owns (the replaced head) are "
        f"reported as not_in_model at 'optimizer'; got {held}"
    )
    assert where(findings, "not_in_optimizer") == ["head.bias", "head.weight"], (
        "the trainable parameters the optimizer does not hold are reported as not_in_optimizer, "
        "matched by identity even when the old and new head have the same shapes"
    )
    assert "no_grad" not in codes(findings), (
        "the new head is on the path from the loss: backward reaches it, so it is not no_grad"
    )


@pytest.mark.task("ch08.2")
def test_diagnose_matches_tensors_by_identity_not_by_value():
    """What the optimizer holds is matched with the model's parameters by identity: clones
    and aliases equal in value are not the model's (not_in_model, not_in_optimizer), and of
    two layers with equal values only the one the optimizer holds is held (no frozen,
    not_moving for its twin); a weight tied across two layers is one parameter, found once."""
    for case in IDENTITY_CASES:
        with because(f"diagnose raised on a setup with {case}"):
            findings = diagnosed_held_by_value(case, 2)
        expected = ref.diagnose(*held_by_value(case), 2)
        got, want = finding_set(findings), finding_set(expected)
        if IDENTITY_CASES[case][0] == "tied":  # each finding once per tensor, by any name
            registered = {}  # a tensor's registrations: any one of them may name it
            for n, p in held_by_value(case)[0].named_parameters(remove_duplicate=False):
                registered.setdefault(id(p), []).append(n)
            tied = [names for names in registered.values() if len(names) > 1]
            first = {n: names[0] for names in registered.values() for n in names}
            got, want = once_per_tensor(findings, first), once_per_tensor(expected, first)
            assert got == want, (
                f"diagnose(model, SGD(...), mse_loss, batch, 2) with {case} found {got} (a "
                f"name shown as its tensor's first registration), expected {want}: "
                + "; ".join(f"{' and '.join(names)} are one tensor" for names in tied)
                + ". A tied parameter is one parameter: list the model's parameters once each "
                "(as named_parameters() does), not once per module or per name registering it"
            )
        assert got == want, (
            f"diagnose(model, SGD(...), mse_loss, batch, 2) with {case} found {got}, expected "
            f"{want}: a tensor is the model's parameter only if it is the same object (id(p)), "
            "whatever its shape, dtype and values — equal values (a clone, a detached alias of "
            "the same memory, a twin layer) are another tensor. Match with id() or a set of "
            "tensors, never ==, torch.equal or data_ptr(), nor `p in list` (list membership "
            "compares with ==)"
        )


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_a_zero_learning_rate():
    """lr 0: every parameter is not_moving and the loss is constant; nothing else mechanical."""
    findings = diagnosed("lr 0", 6)
    names = ["features.0.bias", "features.0.weight", "head.bias", "head.weight"]
    assert where(findings, "not_moving") == names and "loss_constant" in codes(findings), (
        "with learning rate 0 every parameter gets a gradient but none moves (not_moving) and the "
        "loss stays constant (loss_constant)"
    )
    assert where(findings, "loss_constant") == ["loss"], "loss_constant is reported at 'loss'"
    for setup in ("lr 0", "infinite gradient", "infinite lr", "overflow", "detached layer"):
        other = diagnosed(setup, 4)
        assert not repeated(other), (
            f"diagnose on the {setup!r} setup over 4 steps reported {repeated(other)} more "
            "than once: one Finding per problem, however many steps show it. Collect findings "
            "per (code, where) across the steps, then report each once"
        )
    assert "not_in_optimizer" not in codes(findings) and "no_grad" not in codes(findings), (
        "lr 0 is not a registration or reachability problem"
    )


@pytest.mark.task("ch08.2")
def test_not_moving_is_judged_per_parameter_and_exactly():
    """not_moving names exactly the parameters that never changed; a tiny but real move is moving."""
    findings = diagnosed("lr 0 for the head only", 6)
    assert where(findings, "not_moving") == ["head.bias", "head.weight"], (
        "with lr 0 in the head's param group only, exactly head.weight and head.bias are "
        f"not_moving (got {where(findings, 'not_moving')}): judge each parameter on its own"
    )
    assert "loss_constant" not in codes(findings), "the features still learn: the loss moves"
    findings = diagnosed("a parameter with an exactly zero gradient", 3)
    assert where(findings, "not_moving") == ["dead"], (
        "diagnose(model, SGD(lr=0.1), mse_loss, batch, 3) on a model whose forward adds "
        "0 * self.dead: backward gives `dead` a gradient of exact zeros on every step and it "
        f"never changes, so it is not_moving; got not_moving at {where(findings, 'not_moving')}. "
        "A gradient of zeros is still a gradient (.grad is not None): not_moving asks whether "
        "the value changed, not whether the gradient was nonzero"
    )
    findings = diagnosed("lr 3e-6", 4)
    assert where(findings, "not_moving") == [], (
        "with lr 3e-6 every parameter changes by a tiny amount, and changed is changed: "
        f"not_moving means never changed at all (got {where(findings, 'not_moving')}); "
        "torch.allclose calls such a move equal — compare exactly (torch.equal)"
    )


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_gradients_cleared_before_the_step():
    """Gradients cleared between backward and step: not_moving for each parameter, not no_grad."""
    findings = diagnosed("zero_grad before step", 6)
    assert len(where(findings, "not_moving")) == 4, (
        "gradients cleared between backward and step: parameters had gradients after backward "
        "but never moved — not_moving for each"
    )
    assert "no_grad" not in codes(findings), (
        "backward reached every parameter: read .grad right after backward, before step() "
        "(which here clears it), so this is not_moving and never no_grad"
    )


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_shuffled_labels():
    """Shuffled labels on a linear model: at_chance only; the true labels: no finding."""
    findings = diagnosed("shuffled labels", 20)
    assert codes(findings) == {"at_chance"} and where(findings, "at_chance") == ["loss"], (
        "with shuffled labels a linear model cannot beat the label-frequency baseline: at_chance "
        f"at 'loss' only (the mechanics are healthy); got {sorted(codes(findings))}"
    )
    assert diagnosed("true labels", 20) == [], (
        "with the true labels the same setup is healthy and gets no finding"
    )


@pytest.mark.task("ch08.2")
def test_diagnose_softmax_fed_to_cross_entropy():
    """Probability rows fed to cross_entropy are probabilities_as_logits at 'output'."""
    findings = diagnosed("softmax", 10)
    assert "probabilities_as_logits" in codes(findings), (
        "outputs that are probability rows (non-negative, summing to 1) passed to a loss that "
        "applies log_softmax itself are reported as probabilities_as_logits"
    )
    assert where(findings, "probabilities_as_logits") == ["output"], (
        "probabilities_as_logits is reported once, at 'output'"
    )
    assert not {"not_in_optimizer", "no_grad", "frozen"} & codes(findings), (
        "softmax before cross_entropy is not a registration or reachability problem"
    )


PROBABILITY_CASES = [  # (how the rows are made, targets, batch size, reported?, why)
    (
        "softmax",
        "int",
        128,
        True,
        "float32 softmax rows over 10 classes sum to 1 only up to rounding: compare with a "
        "tolerance",
    ),
    (
        "saturated softmax",
        "int",
        128,
        True,
        "a saturated softmax holds exact zeros, and zero is non-negative",
    ),
    ("softmax", "int", 1, True, "a batch of one example has one probability row"),
    (
        "softmax",
        "uint8",
        128,
        True,
        "uint8 labels are integer targets too: the check is 'not floating point', not 'int64'",
    ),
    ("twice softmax", "int", 128, False, "non-negative rows that sum to 2 are not probabilities"),
    (
        "later rows doubled",
        "int",
        128,
        False,
        "only the first row is a distribution (the others sum to 2): every row must be one, "
        "so check all rows, not outputs[0]",
    ),
    (
        "first row logits",
        "int",
        128,
        False,
        "the first row is raw logits (negative entries) and only the others are distributions: "
        "every row must be one, so check all rows, not one",
    ),
    (
        "row sums 0.5 and 1.5",
        "int",
        128,
        False,
        "non-negative rows summing alternately to 0.5 and 1.5 average 1 but are not "
        "probabilities: each row's own sum must be 1",
    ),
    (
        "last row shifted",
        "int",
        128,
        False,
        "every row sums to 1 but the last holds a negative entry: every entry of every row must "
        "be non-negative",
    ),
    (
        "small negatives",
        "int",
        128,
        False,
        "rows that sum to 1 but hold (slightly) negative entries are not probabilities",
    ),
    (
        "one-column softmax",
        "int",
        128,
        False,
        "a single output column is not a distribution over classes (the contract needs C >= 2)",
    ),
    (
        "softmax",
        "float",
        128,
        False,
        "with float targets (a regression loss) probability outputs may be what is wanted",
    ),
    *[
        (
            "softmax",
            dtype,
            128,
            False,
            f"{dtype} targets are float targets too (a regression loss): the contract's "
            "integer-target check is 'not floating point', whatever the float width",
        )
        for dtype in ("float64", "bfloat16")
    ],
]
NEGATIVE_ROWS = ("small negatives", "first row logits", "last row shifted")


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_probabilities_as_logits_needs_probability_rows_and_integer_targets():
    """probabilities_as_logits: [N, C >= 2] outputs whose every row is non-negative and sums to 1 (to float32 rounding), integer targets only (float targets of any width are not); entries in [0, 1] whose rows do not sum to 1 (a sigmoid, a scaled or cut softmax, a softmax over the batch) are not, nor rows of entries <= 0 (log-probabilities, negated probabilities)."""
    for how, targets, n, expected, why in PROBABILITY_CASES:
        with because(f"diagnose raised on outputs made by {how!r} with {targets} targets"):
            findings, negative, zero = diagnosed_probability_like(how, targets, 5, n)
        assert negative == (how in NEGATIVE_ROWS) and zero == (how == "saturated softmax"), (
            f"course bug: the {how!r} outputs are not what the case needs"
        )
        got = "probabilities_as_logits" in codes(findings)
        assert got == expected, (
            f"outputs made by {how!r} with {targets} targets on {n} example(s): "
            f"probabilities_as_logits {'missing' if expected else 'reported'} — {why}"
        )
    cases = row_cases(94, 5)
    with because("diagnose raised on outputs made by one of ROW_WAYS"):
        seen = rows_diagnosed(cases)
    in_unit_range = 0
    for case, (findings, out) in zip(cases, seen):
        how, _, n, c, _, scales, labels, dtype = case
        judge.answer(
            out,
            (n, c),
            f"course bug: the {how!r} outputs",
            bound=100 if how == "log_softmax" else 1.5,
        )
        sums = out.double().sum(dim=1)
        off = float((sums - 1).abs().max())
        expected = dict(ROW_WAYS)[how]
        assert (off <= 1e-5) == expected and (expected or off >= 1.9e-3), (
            f"course bug: the {how!r} rows sum to 1 within {off:.3g}"
        )
        if not expected and float(out.min()) >= 0 and float(out.max()) <= 1:
            in_unit_range += 1
        got = "probabilities_as_logits" in codes(findings)
        scaled = f" (row factors {[round(v, 3) for v in scales]})" if how.endswith("scaled") else ""
        what = (
            f"diagnose on {dtype} outputs [{n}, {c}] made by {how!r}{scaled}, {labels} labels: "
            f"every entry in [{float(out.min()):.3g}, {float(out.max()):.3g}], row sums "
            f"{float(sums.min()):.4g} to {float(sums.max()):.4g}"
        )
        if how in NEGATIVE_WAYS:
            assert not got, (
                f"{what}: probabilities_as_logits reported — these rows are not probabilities: "
                "every entry is <= 0 (log-probabilities, whose exp sums to 1, or negated "
                "probabilities, whose magnitudes do). A model that ends in log_softmax feeds "
                "cross_entropy legally (log_softmax leaves log-probabilities as they are); the "
                "finding is for rows of non-negative entries that each sum to 1, nothing else"
            )
            continue
        assert got == expected, (
            f"{what}: probabilities_as_logits reported — entries between 0 and 1 are not yet "
            "probability rows (a sigmoid per class, a scaled or cut softmax, a softmax over the "
            "batch): every row's own sum must be 1, up to float rounding, beside every entry "
            "being non-negative"
            + (
                f". These rows miss 1 by up to {off:.2g}, thousands of times float rounding "
                "(a float32 row of a few entries misses by about 1e-7, a float64 row by about "
                "1e-16): a tolerance on the row sums must be of rounding size, not a fraction "
                "of a percent"
                if off < 1e-2
                else ""
            )
            if got
            else f"{what}: probabilities_as_logits missing — every entry is non-negative and "
            "every row sums to 1 up to float rounding, whatever made them"
        )
    assert in_unit_range >= 10, f"course bug: {in_unit_range} cases lie in [0, 1]"


@pytest.mark.task("ch08.2")
def test_diagnose_unreachable_and_nonfinite():
    """A detached layer is no_grad; a loss that overflows is nonfinite at 'loss'."""
    findings = diagnosed("detached layer", 5)
    assert where(findings, "no_grad") == ["body.bias", "body.weight"], (
        "trainable parameters that backward never reaches (their .grad stays None) are reported "
        "as no_grad"
    )
    findings = diagnosed("overflow", 30)
    assert "loss" in where(findings, "nonfinite"), (
        "a loss that overflows to inf or nan is reported as nonfinite at 'loss'"
    )
    assert "loss_constant" not in codes(findings), "a nan loss never counts as constant"


@pytest.mark.task("ch08.2")
def test_no_grad_means_never_reached_on_any_step():
    """A parameter reached only on the first step, or only on later steps, or reached with a gradient of exact zeros (in whole or in part, on some or every step), is not no_grad (while one never reached is, whether or not the optimizer holds it: silence counts only from a diagnose that can speak); a forward whose whole output has no graph leaves every trainable parameter no_grad, and diagnose still returns its findings."""
    assert where(diagnosed("detached layer", 5), "no_grad") == ["body.bias", "body.weight"], (
        "trainable parameters that backward never reaches (their .grad stays None) are reported "
        "as no_grad"
    )
    findings = diagnosed("phased", 5)
    assert where(findings, "no_grad") == [], (
        f"'early' is reached on the first step only and 'late' on every later step, yet "
        f"diagnose reported no_grad for {where(findings, 'no_grad')}: no_grad means .grad stayed "
        "None after every backward — look at every step, right after backward"
    )
    assert where(findings, "not_moving") == [], "both moved on the steps that reached them"
    cases = side_branch_cases(93, 3)
    graphless = [case for case in cases if case[0] in NO_GRAPH_WAYS]
    cases = [case for case in cases if case[0] not in NO_GRAPH_WAYS] + graphless
    with because("diagnose raised on a model with a side branch (see SIDE_WAYS)"):
        seen = side_branches_diagnosed(cases[: -len(graphless)])
    with because(
        "diagnose raised on a model whose parameters all require grad but whose forward leaves "
        "its output without a graph (detached, or computed under no_grad), so the loss has none: "
        "backward is possible only when the loss itself has a graph, and parameters that require "
        "grad do not give it one. Such a run still has its findings (no_grad for every parameter "
        "backward never reaches)"
    ):
        seen += side_branches_diagnosed(graphless)
    for case, findings in zip(cases, seen):
        how, _, d_in, n_out, bias, labels, optimizer, steps, held = case
        got = finding_set(findings, ("at_chance",))  # a few steps: at_chance is beside the point
        want = finding_set(ref.diagnose(*side_branch_run(case)), ("at_chance",))
        what = (
            f"diagnose(model, {optimizer} over {'every parameter' if held == 'all' else 'main only'}, "
            f"{'cross_entropy' if labels else 'mse_loss'}, batch, "
            f"{steps}) on Linear({d_in}, {n_out}) plus a side Linear{'' if bias else ' without bias'}"
            + (f", {how}" if how in NO_GRAPH_WAYS else f" whose output is added {how}")
        )
        extra = sorted(w for c, w in got if c == "no_grad" and ("no_grad", w) not in want)
        assert not extra, (
            f"{what} reported no_grad for {extra}: backward reaches them, so their .grad is a "
            "tensor after backward (of zeros, or zeros in part, on some or every step). "
            "no_grad means .grad stayed None after every backward — judge reachability by "
            "whether .grad is None, never by the gradient's values (a gradient of exact zeros is "
            f"still a gradient; such a parameter that never moves is not_moving). Found {got}, "
            f"expected {want}"
        )
        missing = sorted(w for c, w in want if c == "no_grad" and ("no_grad", w) not in got)
        assert not missing, (
            f"{what}: no_grad missing for {missing}: backward never reaches them"
            + (" (the loss has no graph at all)" if how in NO_GRAPH_WAYS else "")
            + ", so their .grad stays None on every step"
            + (
                "; no_grad is about every trainable parameter of the model, whether or not the "
                "optimizer holds it (one it does not hold is not_in_optimizer as well)"
                if held != "all"
                else ""
            )
            + f". Found {got}, expected {want}"
        )
        assert got == want, f"{what}: found {got}, expected {want}"


@pytest.mark.task("ch08.2")
def test_nonfinite_gradients_and_parameters_are_reported_by_name():
    """An inf or nan gradient (finite loss) and a parameter stepped to inf are nonfinite at the parameter's name, for every parameter of the model, whether or not the optimizer holds it."""
    findings = diagnosed("infinite gradient", 1)
    assert where(findings, "nonfinite") == ["bias", "weight"], (
        f"one step whose loss is finite but whose gradients are +inf gave nonfinite at "
        f"{where(findings, 'nonfinite')}; expected both parameters by name: check every "
        "gradient with torch.isfinite (inf as well as nan)"
    )
    findings = diagnosed("infinite lr", 1)
    assert where(findings, "nonfinite") == ["bias", "weight"], (
        f"one step at lr inf (finite loss and gradients) left the parameters inf/nan, yet "
        f"nonfinite was reported at {where(findings, 'nonfinite')}: check the parameters' values "
        "after the steps too"
    )
    cases = poisoned_cases(1487, 12)
    with because("diagnose raised on a model whose backward makes some gradients inf or nan"):
        seen = poisoned_diagnosed(cases)
    for case, findings in zip(cases, seen):
        _, d_in, hidden, d_out, frozen, held, poison, optimizer, labels, steps = case
        got = sorted(where(findings, "nonfinite"))
        want = sorted(where(ref.diagnose(*poisoned_run(case)), "nonfinite"))
        named = ", ".join(
            f"{n} ({'every entry' if whole else 'one entry'} {v})"
            for n, (v, whole) in poison.items()
        )
        unheld = sorted(n for n in poison if n not in held)  # all poisoned ones require grad
        assert got == want, (
            f"diagnose(model, {optimizer} over {held}, "
            f"{'cross_entropy' if labels else 'mse_loss'}, batch, {steps}) on Linear({d_in}, "
            f"{hidden}) -> Tanh -> Linear({hidden}, {d_out}) times a bare 'scale'"
            f"{', body frozen' if frozen else ''}, whose backward sets the gradient of {named}: "
            f"nonfinite found at {got}, expected {want}"
            + (f" ({unheld} require grad but the optimizer does not hold them)" if unheld else "")
            + ". A gradient or a parameter that is inf or nan is nonfinite whoever holds it: "
            "look at every parameter the model owns (not only those the optimizer steps) after "
            "each backward, and at every parameter's values after the steps"
        )


@pytest.mark.task("ch08.2")
def test_nonfinite_and_not_moving_are_judged_element_by_element():
    """nonfinite means some entry is inf or nan, not_moving that no entry changed: a reduction over finite entries (a norm, a sum) that overflows or underflows decides neither."""
    for name in REDUCTION_CASES:
        with because(f"diagnose raised on one step of sum(w * x) with {name}"):
            findings = reduction_diagnosed(name)
        got, want = finding_set(findings), finding_set(ref.diagnose(*reduction_run(name)))
        assert got == want, (
            f"diagnose on one SGD step of a model sum(w * x) used as its own loss, {name}: "
            f"found {got}, expected {want}. Every entry of every gradient and parameter is "
            "finite here, but a norm or a sum of them overflows float32 to inf (or a norm of "
            "tiny changes underflows to 0): judge nonfinite on the entries themselves "
            "(torch.isfinite(t).all()) and not_moving by exact equality of the values "
            "(torch.equal), never through t.norm(), t.sum() or a tolerance"
        )


CONSTANT_CASES = [  # (losses, constant?)
    ([1.0, 1.0000002, 0.9999998, 1.0000001, 1.0], True),  # spread 4e-7
    ([1.0 + 6e-7 * k for k in range(10)], False),  # neighbours 6e-7 apart, spread 5.4e-6
    ([1.0, 1.5, 1.0], False),  # first equals last
    ([float("nan")] * 4, False),
    ([float("inf")] * 4, False),
    ([1.0, float("nan"), 1.0], False),  # the finite ones agree, but one is nan
    ([1.0, 1.0], True),  # two steps are enough
    ([1.0], False),  # one loss shows no change or lack of it
    ([2.0, 1.0, 2.0], False),
]


@pytest.mark.task("ch08.2")
def test_loss_constant_at_its_threshold():
    """loss_constant: every loss within 1e-6 of every other (max - min), finite losses only."""
    for values, constant in CONSTANT_CASES:
        with because(f"diagnose raised on {len(values)} scripted losses {values}"):
            findings = diagnosed_scripted(values, [0, 1, 2, 3] * 4)
        got = "loss_constant" in codes(findings)
        finite = all(math.isfinite(v) for v in values)
        assert got == constant, (
            f"losses {values[:5]}{'...' if len(values) > 5 else ''}: loss_constant "
            f"{'missing' if constant else 'reported'}; it means two or more losses, all equal to "
            "within 1e-6 (the largest minus the smallest, not neighbours, not first and last)"
            + ("" if finite else ", and a non-finite loss is never constant")
        )
        if not finite:
            assert "loss" in where(findings, "nonfinite"), (
                f"losses {values}: a nan or inf loss is nonfinite at 'loss'"
            )


@probe
def constant_findings(runs):
    """diagnose on a linear model fed each run of scripted losses, (values, dtype): a float32
    model for float32 values, a float64 model (and batch) for float64 ones, so that each loss
    arrives in the model's own precision: the findings of each run."""
    seen = []
    for values, dtype in runs:
        model, optimizer, loss_fn, (x, y) = scripted(values, [0, 1, 2, 3] * 4)
        model.to(getattr(torch, dtype))  # in place: the optimizer holds the same parameters
        batch = (x.to(getattr(torch, dtype)), y)
        seen.append(dbg.diagnose(model, optimizer, loss_fn, batch, len(values)))
    return seen


def near_threshold_losses(base, ulps, dtype="float32"):
    """Losses of ``dtype`` (float32 or float64): ``base`` moved by ``ulps`` steps of that
    dtype's spacing at ``base``, scaled so that their spread lands on either side of 1e-6
    (whatever the magnitude)."""
    b = torch.tensor(base, dtype=getattr(torch, dtype))
    ulp = (torch.nextafter(b.abs(), torch.tensor(math.inf, dtype=b.dtype)) - b.abs()).item()
    unit = max(1, round(2.5e-7 / ulp))  # a few units span 1e-6 (one unit where ulp is coarse)
    return [float(b + k * unit * ulp) for k in ulps]


# magnitudes where float32 spacing is far below, near and above 1e-6, and straddling a
# six-decimal rounding boundary (1.0000005): a tolerance is not a rounding
CONSTANT_BASES = [1.0000005, 0.0123455, 0.7, 1.0, 3.9999995, 250.0, 1000.0, 0.001]


@pytest.mark.task("ch08.2")
@examples(3)
# float64 losses of a float64 model near 1000 and 250, whose spread (1.25e-6 to 1.5e-6, or
# 7.5e-7) a float32 copy of them would round away or across 1e-6, in every run
@example(
    runs=[
        (1000.0, 1.0, [-3, 2], "float64"),
        (250.0, -1.0, [0, 3, -2], "float64"),
        (1000.0, 1.0, [1, -2, 0], "float64"),
        (0.7, 1.0, [-2, 3, 0, 1], "float64"),
        (3.9999995, -1.0, [3, -2], "float64"),
        (1.0000005, 1.0, [0, 2, -3], "float32"),
        (250.0, 1.0, [1, -1], "float32"),
        (0.001, -1.0, [2, -3, 0], "float64"),
    ]
)
@given(
    runs=st.lists(
        st.tuples(
            st.sampled_from(CONSTANT_BASES),
            st.sampled_from([1.0, -1.0]),
            st.lists(st.integers(-3, 3), min_size=2, max_size=6),
            st.sampled_from(["float32", "float64"]),
        ),
        min_size=8,
        max_size=8,
    )
)
def test_loss_constant_is_a_tolerance_at_any_magnitude(runs):
    """loss_constant iff max - min <= 1e-6 on generated float32 and float64 losses (of a
    float32 or float64 model) around magnitudes from 1e-3 to 1000, either sign, near a
    six-decimal rounding boundary: no rounding, no relative tolerance, no float32 copy."""
    values = [near_threshold_losses(sign * b, ulps, dtype) for b, sign, ulps, dtype in runs]
    seen = constant_findings([(v, run[3]) for v, run in zip(values, runs)])
    for losses, findings, run in zip(values, seen, runs):
        spread = max(losses) - min(losses)
        want = spread <= 1e-6
        as_float32 = torch.tensor(losses, dtype=torch.float32)
        rounded = float(as_float32.max()) - float(as_float32.min())
        hint = (
            f" These are the float64 losses of a float64 model: in float32 (a default "
            f"torch.tensor(losses), or .float()) their spread would be {rounded:.3g}, on the "
            "other side of 1e-6; take the losses as the Python floats loss.item() gives and "
            "compare them as they are"
            if run[3] == "float64" and (rounded <= 1e-6) != want
            else ""
        )
        assert ("loss_constant" in codes(findings)) == want, (
            f"diagnose on {len(losses)} steps whose {run[3]} losses are {losses} (spread "
            f"{spread:.3g}): loss_constant {'missing' if want else 'reported'}. It means the "
            "largest loss minus the smallest is at most 1e-6, an absolute tolerance: not "
            "equality after round(v, 6) or a formatted string (two losses 1e-7 apart can round "
            "apart), and not math.isclose's relative tolerance." + hint
        )


# uniform over 4 classes: entropy ln 4 = 1.3863, so the threshold 0.9 * ln 4 is 1.2477
UNIFORM = [0, 1, 2, 3] * 8
SKEWED = [0] * 18 + [1] * 2  # entropy 0.3251: threshold 0.2926, while 0.9 * ln 2 is 0.6238
GAPPY = [0] * 10 + [2] * 9 + [3]  # no label 1, one label 3: entropy 0.8557, threshold 0.7701
CHANCE_CASES = [  # (losses, labels, at chance?): the best loss against 0.9 x the entropy
    ([1.40, 1.30, 1.26, 1.25], UNIFORM, True),  # best just above
    ([1.40, 1.30, 1.24, 1.25], UNIFORM, False),  # best just below
    ([1.40, 1.20, 1.30, 1.35], UNIFORM, False),  # the best is not the last
    ([1.40, 1.36, 1.33, 1.30], UNIFORM, True),  # between 0.9 and 1 times the entropy
    ([0.60, 0.50, 0.45, 0.40], SKEWED, True),  # skewed labels: above their entropy
    ([0.40, 0.30, 0.28, 0.27], SKEWED, False),  # skewed labels: below
    ([0.90, 0.85, 0.80], GAPPY, True),  # absent labels do not count, a single one does
    ([0.90, 0.80, 0.72], GAPPY, False),  # below 0.7701, above 0.9 x the entropy without label 3
    ([0.50, 0.45, 0.40], [1] * 12, False),  # one label only: there is no chance level
]


def label_entropy(labels):
    """The entropy of the label frequencies of ``labels`` (trusted side, float64)."""
    counts = torch.bincount(torch.tensor(labels)).double()
    p = counts[counts > 0] / counts.sum()
    return float(-(p * p.log()).sum())


def mixed_chance_runs(seed, count):
    """``count`` seeded runs of scripted losses on labels (a fixed label set or a random one of
    2 to 5 classes), each with 1 to steps - 1 losses replaced by nan or inf (the first, the
    last, or random steps); the finite ones either all above 0.9 x the labels' entropy or with
    a best one below it, placed after the first non-finite loss in every other such run.
    Every finite loss is at least 1% away from the threshold."""
    rng = random.Random(seed)
    runs = []
    for i in range(count):
        labels = [UNIFORM, SKEWED, GAPPY, None][i % 4]
        if labels is None:
            c = rng.randint(2, 5)
            labels = [rng.randrange(c) for _ in range(rng.randint(8, 24))]
            labels[:2] = [0, 1]  # two distinct labels at least
        threshold = 0.9 * label_entropy(labels)
        steps = rng.randint(3, 6)
        bad = rng.randint(1, steps - 1)
        placement = (i // 2) % 3  # the first steps, the last steps, random steps
        if placement == 0:
            spots = list(range(bad))
        elif placement == 1:
            spots = list(range(steps - bad, steps))
        else:
            spots = rng.sample(range(steps), bad)
        good = [k for k in range(steps) if k not in spots]
        values = [threshold * rng.uniform(1.01, 1.4) for _ in range(steps)]
        if i % 2:  # one finite loss below the threshold: not at chance
            after = [k for k in good if k > min(spots)]
            at = after[0] if after and i % 4 == 1 else rng.choice(good)
            values[at] = threshold * rng.uniform(0.5, 0.99)
        for k in spots:
            values[k] = rng.choice([math.nan, math.inf])
        runs.append((values, labels))
    return runs


def one_label_runs(seed):
    """Batches of one distinct label, one of each size 1 to 40 (the label drawn from 0 to 4),
    each with 2 to 4 scripted losses between 0.05 and 3: no chance level, whatever the loss."""
    rng = random.Random(seed)
    return [
        (
            [round(rng.uniform(0.05, 3.0), 4) for _ in range(rng.randint(2, 4))],
            [rng.randrange(5)] * n,
        )
        for n in range(1, 41)
    ]


def one_label_message(values, labels):
    """What at_chance reported on a batch of one distinct label tells the student."""
    return (
        f"losses {values} on a batch whose {len(labels)} labels are all {labels[0]}: at_chance "
        "reported, but with a single distinct label there is no chance level (at_chance needs "
        "at least two distinct labels). The entropy of one label is exactly 0, yet a computed "
        "one may come out a rounding error away (1e-16 from clamped probabilities or from "
        "log N minus a mean of c log c): decide 'two distinct labels' on the labels "
        "themselves, not on the sign of a floating-point entropy"
    )


@probe
def chance_findings(runs):
    """diagnose on a linear model fed each run of scripted losses, on its labels: the
    findings of each run."""
    return [dbg.diagnose(*scripted(values, labels), len(values)) for values, labels in runs]


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_at_chance_at_its_threshold():
    """at_chance: the best loss stays above 0.9 x the entropy of the batch's label frequencies; the best of the finite losses when some steps were nan or inf; never on a batch of one distinct label."""
    for values, labels, at_chance in CHANCE_CASES:
        findings = diagnosed_scripted(values, labels)
        got = "at_chance" in codes(findings)
        if len(set(labels)) == 1:
            assert not got, one_label_message(values, labels)
        entropy = label_entropy(labels) + 0.0  # (no -0.0)
        assert got == at_chance, (
            f"losses {values} on labels with entropy {entropy:.4f} (threshold "
            f"{0.9 * entropy:.4f}): at_chance {'missing' if at_chance else 'reported'}; compare "
            "the best (smallest) loss with 0.9 x the entropy of the label frequencies in the "
            "batch (not the log of the number of classes; labels that never occur do not count, "
            "and a batch of one label has no chance level)"
        )
        if not at_chance:  # below the threshold float targets say nothing about the dispatch
            continue
        findings = diagnosed_scripted(values, labels, float_targets=True)
        assert "at_chance" not in codes(findings), (
            "at_chance is for integer targets only; with float targets there is no label baseline"
        )
    values = [1.40, 1.35, 1.30]  # above 0.9 x ln 4 = 1.2477 on UNIFORM labels: at chance
    for dtype in ("uint8", "int16", "int32", "float64", "float16", "bfloat16"):
        floating = dtype.startswith(("float", "bfloat"))
        with because(
            f"diagnose raised on losses {values} with {dtype} "
            f"{'one-hot targets' if floating else 'labels'}"
        ):
            findings = diagnosed_scripted(values, UNIFORM, float_targets=floating, dtype=dtype)
        assert ("at_chance" in codes(findings)) != floating, (
            f"losses {values} on {len(UNIFORM)} uniform labels over 4 classes stored as "
            f"{dtype}{' one-hot rows' if floating else ''}: at_chance "
            f"{'reported' if floating else 'missing'}. Integer targets are integer whatever "
            "their width and float targets float whatever theirs: dispatch on "
            "y.is_floating_point(), not on one dtype such as int64 or float32"
        )
    runs = one_label_runs(1674)
    for (values, labels), findings in zip(runs, chance_findings(runs)):
        assert "at_chance" not in codes(findings), one_label_message(values, labels)
    runs = mixed_chance_runs(1608, 16)
    for (values, labels), findings in zip(runs, chance_findings(runs)):
        threshold = 0.9 * label_entropy(labels)
        best = min(v for v in values if math.isfinite(v))
        want = best > threshold
        bad = [k for k, v in enumerate(values) if not math.isfinite(v)]
        shown = "[" + ", ".join(f"{v:.4f}" for v in values) + "]"
        assert ("at_chance" in codes(findings)) == want, (
            f"losses {shown} (non-finite at step{'s' if len(bad) > 1 else ''} "
            f"{', '.join(map(str, bad))}) on {len(labels)} labels with entropy "
            f"{threshold / 0.9:.4f} (threshold {threshold:.4f}): at_chance "
            f"{'missing' if want else 'reported'}, but the best finite loss is {best:.4f}. A nan "
            "or inf step is reported as nonfinite; it neither voids the run's other losses nor "
            "ends the run: the best loss is the smallest finite one over every step, before "
            "and after the non-finite ones"
        )


@pytest.mark.task("ch08.2")
def test_diagnose_everything_frozen_and_leaves_the_caller_alone():
    """A fully frozen model: frozen for each parameter and a constant loss; the caller's objects stay untouched."""
    with because("with every parameter frozen the loss has no graph: skip backward() then"):
        findings = diagnosed("everything frozen", 4)
    assert len(where(findings, "frozen")) == 4 and "loss_constant" in codes(findings), (
        "a model whose every parameter is frozen: frozen for each parameter the optimizer holds, "
        "and a constant loss"
    )
    seen = caller_after_diagnose(39, 5)
    assert all(judge.is_equal(a, b) for a, b in zip(seen["before"], seen["after"])), (
        "diagnose runs its steps on a copy: the caller's model must be unchanged"
    )
    assert not any(seen["grads_set"]) and seen["optimizer_state"] == 0, (
        f"after diagnose the caller's parameters hold gradients {seen['grads_set']} and its Adam "
        f"keeps state for {seen['optimizer_state']} tensors (steps {seen['steps_recorded']}): run "
        "the steps on a copy of model and optimizer and leave the caller's untouched"
    )


def repeated(findings):
    """The (code, where) pairs reported more than once (not_in_model may repeat: the contract
    allows one per held tensor)."""
    pairs = [(f.code, f.where) for f in checked(findings) if f.code != "not_in_model"]
    return sorted({pair for pair in pairs if pairs.count(pair) > 1})


def once_per_tensor(findings, first):
    """(code, where) of ``findings`` (checked first), each name replaced by its tensor's first
    registration (``first``), as a sorted list where a repeat shows; not_in_model, which may
    come once per foreign tensor, counted once."""
    seen = [(f.code, first.get(f.where, f.where)) for f in checked(findings)]
    return sorted({s for s in seen if s[0] == "not_in_model"}) + sorted(
        s for s in seen if s[0] != "not_in_model"
    )


def finding_set(findings, ignore=()):
    """The (code, where) pairs of ``findings`` (checked first), without the codes in ``ignore``."""
    return sorted({(f.code, f.where) for f in checked(findings) if f.code not in ignore})


@pytest.mark.task("ch08.2")
def test_diagnose_leaves_a_used_caller_alone():
    """A caller's model and optimizer as a run leaves them (gradients in .grad, eval mode but for one layer, a frozen layer, Adam with state, float32 or float64) come back untouched, and are diagnosed from the state they are in: an optimizer's momentum or moments still move a parameter whose gradient is zero."""
    for dtype in (torch.float32, torch.float64):
        with because(
            f"diagnose raised on a {dtype} model the caller had trained (a .grad in every "
            "parameter, eval mode but for its last layer, its first layer frozen) with its "
            "Adam (two steps of state)"
        ):
            findings = used_caller_diagnosed(dtype, 4)
        want = finding_set(ref.diagnose(*used_by_the_caller(dtype), 4))
        assert finding_set(findings) == want, (
            f"diagnose on a {dtype} model the caller had already trained (gradients left in "
            f".grad, eval mode, a frozen layer outside the optimizer, Adam with state) found "
            f"{finding_set(findings)}, expected {want}: each step starts from zero_grad on the "
            "copy, whatever the caller's .grad held"
        )
    optimizers = ("SGD momentum", "Adam")
    with because("diagnose raised on a model whose optimizer has already taken two steps"):
        seen = stateful_dead_diagnosed(optimizers, 3)
    for name, findings in zip(optimizers, seen):
        got, want = finding_set(findings), finding_set(ref.diagnose(*stateful_dead(name), 3))
        assert got == want, (
            f"diagnose(Linear + 0 * dead, {name} that has already taken two steps, mse_loss, "
            f"batch, 3) found {got}, expected {want}: dead's gradient is exactly zero, yet "
            "the optimizer's state (momentum buffers, Adam's moments and step count) keeps "
            "moving it, so it is not not_moving. The copy of the optimizer must run the "
            "caller's steps, its state included: deep-copy (model, optimizer) together, do "
            "not build a new optimizer or re-point a copy's param_groups without its state"
        )


@pytest.mark.task("ch08.2")
def test_nonfinite_runs_are_diagnosed_in_full():
    """A loss that turns inf or nan: all `steps` steps still run (backward and step included), and the findings are exactly those of the run — nonfinite for the loss and for every gradient or parameter it poisoned, no no_grad."""
    for name in NONFINITE_RUNS:
        with because(f"diagnose on a run whose loss is {name} raised"):
            findings, steps_taken = nonfinite_diagnosed(name)
        *setup, steps = nonfinite_run(name)
        labels = not setup[3][1].is_floating_point()
        # With labels and no finite loss, the contract leaves "the best loss" of at_chance open.
        ignore = ("at_chance",) if labels else ()
        got = finding_set(findings, ignore)
        want = finding_set(ref.diagnose(*setup, steps), ignore)
        spurious = [w for c, w in got if c == "no_grad"]
        assert not spurious, (
            f"diagnose on a run whose loss is {name} reported no_grad for {spurious}: backward "
            "reaches them (an inf or nan loss still backpropagates), so .grad is set — "
            "stopping before backward() leaves it None and blames reachability"
        )
        assert steps_taken == steps, (
            f"diagnose(..., steps={steps}) on a run whose loss is {name} called the "
            f"optimizer's step() {steps_taken} times: run every step, even once the loss is "
            "inf or nan — backward and step() are what show which gradients and parameters "
            "it poisons"
        )
        assert not repeated(findings), (
            f"diagnose on a run whose loss is {name} ({steps} steps) reported "
            f"{repeated(findings)} more than once: one Finding per problem — a loss or a "
            "parameter that is inf or nan on several steps is still one problem. Collect "
            "findings per (code, where) across the steps (a dict), then report each once"
        )
        assert got == want, (
            f"diagnose on a run whose loss is {name} found {got}, expected {want}: nonfinite "
            "at 'loss', and at every parameter whose gradient or value became inf or nan "
            "(checked after each backward and after the steps), and nothing the run does not "
            "show"
        )


@pytest.mark.task("ch08.2")
def test_zero_steps_still_check_what_the_optimizer_holds():
    """With steps=0 nothing runs: a healthy setup gets no finding, the identity checks still report."""
    findings = diagnosed("healthy Adam", 0)
    assert findings == [], (
        f"diagnose(..., steps=0) on a healthy setup reported {findings}: without a step no "
        "gradient was expected yet, so there is no no_grad, not_moving or loss finding"
    )
    findings = diagnosed("book's bug", 0)
    assert where(findings, "not_in_optimizer") == ["head.bias", "head.weight"], (
        "the comparison of named_parameters() with the param groups needs no step: with "
        f"steps=0 the book's bug is still not_in_optimizer (got {findings})"
    )


@pytest.mark.task("ch08.2")
def test_diagnose_runs_the_given_steps_each_with_its_own_gradient():
    """diagnose takes exactly `steps` optimizer steps, zeroing the gradients before each backward."""
    recorded, findings = recorded_steps("constant gradient", 7)
    where(findings, "no_grad")  # the steps count only beside a real answer
    assert len(recorded) == 7, (
        f"diagnose(..., steps=7) called the optimizer's step() {len(recorded)} times"
    )
    first = recorded[0]
    same = all(
        all(
            g is not None and judge.is_close(g, f, atol=1e-6, rtol=1e-5)
            for g, f in zip(step, first)
        )
        for step in recorded
    )
    assert same, (
        "with a loss whose gradient never changes, every step() must see the same gradient; "
        "they grew from step to step: call zero_grad before every backward, or gradients "
        "accumulate"
    )


@pytest.mark.task("ch08.2")
def test_diagnose_is_silent_on_other_healthy_setups():
    """Healthy Adam, SGD with momentum on a regression, a frozen layer outside the optimizer and [N] outputs on integer targets get no finding."""
    for setup in ("healthy Adam", "healthy regression", "frozen twin", "counts regression"):
        findings = diagnosed(setup, 25)
        assert findings == [], (
            f"diagnose on a healthy setup ({setup}) reported {findings}: a frozen parameter is "
            "reported only when the optimizer holds that very tensor (by identity, not shape)"
            if setup == "frozen twin"
            else f"diagnose on a healthy setup ({setup}) reported {findings}"
        )


def local_class_setup(hooked):
    """The healthy regression with a model whose class is defined inside this function, as
    in a notebook or a test (pickle cannot find such a class by name), carrying a lambda
    forward hook when ``hooked``."""

    class LocalNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return torch.tanh(self.fc(x))

    torch.manual_seed(59)
    model = LocalNet()
    if hooked:
        model.register_forward_hook(lambda module, args, out: None)
    _, _, loss_fn, batch = healthy_regression()
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), loss_fn, batch


@probe
def local_class_diagnosed(hooked):
    """diagnose on local_class_setup(hooked), 25 steps."""
    return dbg.diagnose(*local_class_setup(hooked), 25)


@pytest.mark.task("ch08.2")
def test_diagnose_copies_a_model_whose_class_is_local():
    """A model whose class is defined inside a function, or that carries a lambda hook, is copied and diagnosed like any other."""
    for hooked in (False, True):
        what = "a model class defined inside a function" + (" with a lambda hook" * hooked)
        with because(
            f"diagnose raised on a healthy setup with {what}: pickle (torch.save, "
            "torch.load) finds classes and functions by name and cannot copy it; "
            "copy.deepcopy((model, optimizer)) copies any model the caller can train"
        ):
            findings = local_class_diagnosed(hooked)
        assert isinstance(findings, list) and len(findings) == 0, (
            f"diagnose on a healthy setup with {what} reported {findings}"
        )


# ---------------------------------------------------------------- ch08.3 overfit_one_batch


@pytest.mark.task("ch08.3")
@pytest.mark.points(2)
def test_overfit_regression_targets():
    """Float targets are fitted with mean squared error, to near 0, in place; the loss follows the targets' kind whatever their width (float64, float16, bfloat16 float targets; uint8, int32, int16, int8 labels)."""
    g = torch.Generator().manual_seed(42)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g)
    losses, out = overfitted(41, x, y, 150)
    assert type(losses) is list and len(losses) == 150, (
        f"overfit_one_batch(model, batch, 150) returned {type(losses).__name__} "
        f"{len(losses) if hasattr(losses, '__len__') else ''}: a list of one loss per step"
    )
    with torch.no_grad():
        start = F.mse_loss(mlp(41, d_in=4, d_out=3)(x), y).item()
    judge.number(
        float(losses[0]),
        start,
        "losses[0] is the untrained model's mean squared error, measured before the first update",
        abs=1e-12,
        rel=1e-5,
    )
    judge.answer(out, (8, 3), "the trained model's predictions", bound=1e4)
    final = F.mse_loss(out, y).item()
    grew = (
        " The loss ended above where it started: each step must follow that step's gradient "
        "alone (zero_grad before every backward), or the gradients accumulate across steps."
        if final > float(losses[0])
        else ""
    )
    assert final < 0.01 * float(losses[0]), (
        "float targets are fitted with mean squared error; a healthy model drives it to near 0 on "
        f"one batch, and the model is trained in place.{grew}"
    )
    for dtype, labels in TYPED_OVERFITS:
        why = (
            ": labels of any integer dtype are integer targets, and F.cross_entropy takes "
            "class indices as int64 (y.long())"
            if labels
            else ""
        )
        with because(f"overfit_one_batch raised on {typed_case(dtype, labels)}{why}"):
            got = overfit_in_dtype(86, dtype, labels, 2)
        x, y = typed_batch(86, dtype, labels)
        with torch.no_grad():
            out = mlp(86, d_in=3, width=8, d_out=2).to(x.dtype)(x).double()
        loss = F.cross_entropy(out, y.long()) if labels else F.mse_loss(out, y.double())
        want = loss.item()
        coarse = dtype in ("float16", "bfloat16")  # the loss is rounded to their 8-11 bits
        assert len(got) == 2 and judge.is_number(
            got[0], want, abs=1e-6, rel=3e-2 if coarse else 1e-5
        ), (
            f"overfit_one_batch on {typed_case(dtype, labels)}: losses[0] = {got[0]:.5f}, but "
            f"the untrained model's {'cross-entropy' if labels else 'mean squared error'} is "
            f"{want:.5f}. The loss follows the targets' kind, not one dtype: cross-entropy for "
            "integer targets of any width, mean squared error for float targets of any width "
            "(y.is_floating_point()); cross_entropy on float targets reads them as class "
            "probabilities"
        )


TYPED_OVERFITS = [  # (targets' dtype, labels?): the model is cast to float targets' dtype
    ("float64", False),
    ("float16", False),
    ("bfloat16", False),
    ("uint8", True),
    ("int32", True),  # integers too: cross_entropy itself takes int64 (or uint8) indices only
    ("int16", True),
    ("int8", True),
]


def typed_case(dtype, labels):
    """The words for one TYPED_OVERFITS case."""
    if labels:
        return f"a float32 model with {dtype} labels"
    return f"a {dtype} model with {dtype} float targets"


@probe
def overfit_in_two_calls(seed, x, y):
    """overfit_one_batch for 0 steps, then 1 step, then 1 more on one mlp(seed): each call's
    losses and the model's loss between the calls."""
    model = mlp(seed)
    none = dbg.overfit_one_batch(model, (x, y), 0)
    first = dbg.overfit_one_batch(model, (x, y), 1)
    with torch.no_grad():
        between = F.cross_entropy(model(x), y).item()
    second = dbg.overfit_one_batch(model, (x, y), 1)
    return none, first, between, second


@pytest.mark.task("ch08.3")
def test_overfit_records_losses_before_each_update():
    """Each recorded loss belongs to the prediction before that step's update; the model trains in place."""
    g = torch.Generator().manual_seed(43)
    x, y = torch.randn(8, 8, generator=g), torch.arange(8) % 4
    none, first, between, second = overfit_in_two_calls(44, x, y)
    assert list(none) == [], "zero steps give no losses"
    assert len(first) == 1 and judge.is_number(float(second[0]), between, abs=1e-12, rel=1e-5), (
        "each recorded loss belongs to the prediction made before that step's update, and the "
        "model itself is trained in place"
    )


@probe
def overfit_called_twice(seed, x, y, steps):
    """overfit_one_batch twice on one mlp(seed), ``steps`` steps each: the parameters after
    the first call and the second call's losses."""
    model = mlp(seed)
    dbg.overfit_one_batch(model, (x, y), steps)
    after_first = [p.detach().clone() for p in model.parameters()]
    return after_first, [float(v) for v in dbg.overfit_one_batch(model, (x, y), steps)]


@pytest.mark.task("ch08.3")
def test_each_call_starts_a_fresh_adam():
    """A second call on the same model trains it as a first call on a model with those
    weights would: a new Adam each call, with no moments or step count left from before."""
    g = torch.Generator().manual_seed(47)
    x, y = torch.randn(8, 8, generator=g), torch.arange(8) % 4
    with because("overfit_one_batch raised when called a second time on the same model"):
        after_first, second = overfit_called_twice(48, x, y, 4)
    model = mlp(48)
    with torch.no_grad():
        for p, value in zip(model.parameters(), after_first):
            p.copy_(value)
    want = [float(v) for v in ref.overfit_one_batch(model, (x, y), 4)]
    same = len(second) == len(want) and judge.is_close(
        torch.tensor(second), torch.tensor(want), atol=1e-6, rtol=1e-4
    )
    assert same, (
        f"the second overfit_one_batch call on one model (4 steps after 4) gave losses "
        f"{[round(v, 5) for v in second]}, but a fresh Adam from the weights the first call "
        f"left gives {[round(v, 5) for v in want]}: each call builds its own optimizer; one "
        "kept from an earlier call (a cache keyed by the model) carries its moments and step "
        "count into the next run"
    )


def normed_mlp(seed):
    """Linear(4, 8) -> BatchNorm1d(8) -> ReLU -> Linear(8, 3), its weights from ``seed``."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


@probe
def overfit_normed(seed, x, y, steps):
    """overfit_one_batch on normed_mlp(seed): its BatchNorm's buffers afterwards."""
    model = normed_mlp(seed)
    dbg.overfit_one_batch(model, (x, y), steps)
    return {name: b.detach().clone() for name, b in model.named_buffers()}


@pytest.mark.task("ch08.3")
def test_each_step_runs_the_model_once():
    """One forward per step: a BatchNorm's running statistics and its count of batches end
    where the reference's do."""
    g = torch.Generator().manual_seed(49)
    x, y = torch.randn(8, 4, generator=g), torch.arange(8) % 3
    with because("overfit_one_batch raised on a model with a BatchNorm1d layer"):
        got = overfit_normed(50, x, y, 5)
    model = normed_mlp(50)
    ref.overfit_one_batch(model, (x, y), 5)
    want = {name: b.detach().clone() for name, b in model.named_buffers()}
    count = got.get("1.num_batches_tracked") if isinstance(got, dict) else None
    assert count is not None and int(count) == 5, (
        f"after overfit_one_batch for 5 steps the model's BatchNorm counted {count} batches: "
        "each step runs the model once, in training mode (a second forward, to measure the "
        "loss apart from the step, updates the running statistics again)"
    )
    for name in ("1.running_mean", "1.running_var"):
        judge.close(
            got[name],
            want[name],
            f"after overfit_one_batch for 5 steps the BatchNorm's {name[2:]} differs from the "
            "reference's: each step runs the model once, in training mode, and the loss of that "
            "forward is both recorded and backpropagated",
            atol=1e-6,
            rtol=1e-5,
        )


def left_with_gradients(model, x):
    """Leave in every parameter's .grad the gradient of another loss, as a caller's
    earlier backward would."""
    (model(x) ** 2).sum().backward()


class ClassesFirst(nn.Module):
    """[N, L, C] -> [N, C, L]: scores per position, in the layout cross_entropy takes."""

    def forward(self, x):
        return x.transpose(1, 2)


FLOAT_TARGET_VALUES = ("normal", "0/1", "whole numbers", "one value")


def float_targets_of(values, shape, g):
    """float32 targets of ``shape`` drawn from ``g``: from a normal, all 0 or 1, whole
    numbers 0 to 5, or one value (0, 1, 2.5 or -3) everywhere (trusted side)."""
    if values == "normal":
        return torch.randn(shape, generator=g)
    if values == "0/1":
        return torch.randint(0, 2, shape, generator=g).float()
    if values == "whole numbers":
        return torch.randint(0, 6, shape, generator=g).float()
    return torch.full(shape, (0.0, 1.0, 2.5, -3.0)[int(torch.randint(4, (), generator=g))])


def overfit_model(seed, x, y):
    """mlp(seed) shaped for the batch: [N, C] scores (C = 4) for class targets [N], [N, C, L]
    scores for class targets [N, L] (x [N, L, d_in]), [N, k] outputs for real targets [N, k],
    and [N] outputs for real targets [N]."""
    if not y.is_floating_point():
        model = mlp(seed, d_in=x.shape[-1], d_out=4)
        return model if y.dim() == 1 else nn.Sequential(*model, ClassesFirst())
    if y.dim() == 1:
        return nn.Sequential(*mlp(seed, d_in=x.shape[-1], d_out=1), nn.Flatten(0))
    return mlp(seed, d_in=x.shape[-1], d_out=y.shape[1])


@probe
def overfit_trace(seed, x, y, steps, freeze_first, stale=False):
    """overfit_one_batch on overfit_model(seed, x, y) (its first layer frozen if asked; with
    gradients left in .grad by an earlier backward if stale): the losses and the parameters
    afterwards."""
    model = overfit_model(seed, x, y)
    if freeze_first:
        model[0].requires_grad_(False)
    if stale:
        left_with_gradients(model, x)
    losses = dbg.overfit_one_batch(model, (x, y), steps)
    return [float(v) for v in losses], [p.detach().clone() for p in model.parameters()]


def reference_trace(seed, x, y, steps, freeze_first):
    """The same run with the reference overfit_one_batch (trusted side)."""
    model = overfit_model(seed, x, y)
    if freeze_first:
        model[0].requires_grad_(False)
    losses = ref.overfit_one_batch(model, (x, y), steps)
    return list(losses), [p.detach().clone() for p in model.parameters()]


@pytest.mark.task("ch08.3")
@examples(7)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 12),
    d_in=st.sampled_from([3, 8]),
    targets=st.sampled_from([torch.int64, torch.uint8, torch.float32, torch.float64]),
    freeze_first=st.booleans(),
    steps=st.integers(0, 12),
    width=st.sampled_from([4, 1, None]),
    values=st.sampled_from(FLOAT_TARGET_VALUES),
)
@example(
    seed=5,
    n=5,
    d_in=3,
    targets=torch.float32,
    freeze_first=False,
    steps=2,
    width=1,
    values="normal",
)
@example(
    seed=6,
    n=6,
    d_in=3,
    targets=torch.float32,
    freeze_first=False,
    steps=3,
    width=None,
    values="0/1",
)
@example(
    seed=7, n=4, d_in=3, targets=torch.int64, freeze_first=True, steps=2, width=3, values="normal"
)
@example(
    seed=8, n=8, d_in=3, targets=torch.float32, freeze_first=False, steps=3, width=1, values="0/1"
)
@example(
    seed=9,
    n=7,
    d_in=8,
    targets=torch.float64,
    freeze_first=False,
    steps=3,
    width=None,
    values="whole numbers",
)
@example(
    seed=10,
    n=6,
    d_in=3,
    targets=torch.float32,
    freeze_first=True,
    steps=3,
    width=4,
    values="one value",
)
def test_overfit_follows_adam_at_1e_2_like_the_reference(
    seed, n, d_in, targets, freeze_first, steps, width, values
):
    """Losses and trained parameters follow full-batch Adam at lr 1e-2 on CE / MSE, like the reference, for int64 or uint8 class targets ([N], or [N, L] per position), float32 or float64 real ones ([N, 4], [N, 1] or [N], as the model outputs; drawn from a normal, or all 0 or 1, whole numbers, or one value), and 0 to 12 steps: the loss follows the targets' kind, whatever their shape or values."""
    float_targets = targets.is_floating_point
    g = torch.Generator().manual_seed(seed)
    shape = (n,) if width is None else (n, width)
    if float_targets:
        x, y = torch.randn(n, d_in, generator=g), float_targets_of(values, shape, g)
    else:  # labels per position: x [N, L, d_in] and scores [N, C, L]
        x = torch.randn(shape + (d_in,), generator=g)
        y = torch.randint(0, 4, shape, generator=g)
    y = y.to(targets)
    dims = "[N]" if width is None else f"[N, {width}]"
    kind = f"real {dims}" if float_targets else f"class {dims}"
    if float_targets and values != "normal":
        kind += f" ({values}: {brief(y)})"
    with because(
        f"overfit_one_batch raised on {n} examples with {targets} {kind} targets for {steps} "
        "steps (class targets of any integer dtype and any shape cross-entropy takes, [N] or "
        "[N, L] per position; real targets of any float dtype, whatever their shape)"
    ):
        losses, params = overfit_trace(seed, x, y, steps, freeze_first)
    want_losses, want_params = reference_trace(seed, x, y, steps, freeze_first)
    what = (
        f"overfit_one_batch on {n} examples, {targets} {kind} targets"
        + ("" if float_targets or width is None else f" (scores [N, 4, {width}])")
        + f", {steps} steps"
        + (
            " (outputs and targets both [N, 1]: compare them as they are; squeezing one side "
            "broadcasts [N] against [N, 1] into an [N, N] difference)"
            if float_targets and width == 1
            else ""
        )
    )
    assert len(losses) == steps, (
        f"{what} returned {len(losses)} losses: one per step, each measured before its update "
        "(none for 0 steps, and the model left as it was)"
    )
    assert judge.is_close(
        torch.tensor(losses, dtype=torch.float64),
        torch.tensor(want_losses, dtype=torch.float64),
        atol=1e-6,
        rtol=1e-4,
    ), (
        f"{what}: the losses differ from full-batch Adam at lr 1e-2 with "
        f"{'mean squared error' if float_targets else 'cross-entropy'} "
        f"({first_difference(torch.tensor(losses), torch.tensor(want_losses))}); each is "
        "measured before its step's update, and the loss follows the targets' kind whatever "
        "their shape: integer targets are class ids, float targets real values, whether "
        "they are [N] or have more dimensions"
        + (
            ", and whatever values they hold: float targets that are all 0 or 1, whole "
            "numbers or one value are still real targets, fitted with mean squared error "
            "(the dtype decides, never the values)"
            if float_targets and values != "normal"
            else ""
        )
    )
    for k, (p, q) in enumerate(zip(params, want_params)):
        judge.close(
            p,
            q,
            f"{what}: parameter {k} after training differs from Adam at lr 1e-2 "
            f"({first_difference(p, q)})"
            + (": a frozen layer must stay frozen" if freeze_first and k < 2 else ""),
            atol=1e-6,
            rtol=1e-4,
        )


@pytest.mark.task("ch08.3")
def test_overfit_ignores_gradients_left_in_the_model():
    """A model handed over with gradients left in .grad by an earlier backward trains exactly like one without: every step follows its own gradient."""
    g = torch.Generator().manual_seed(78)
    x, y = torch.randn(8, 8, generator=g), torch.randint(0, 4, (8,), generator=g)
    losses, params = overfit_trace(79, x, y, 3, False, stale=True)
    want_losses, want_params = reference_trace(79, x, y, 3, False)
    moved = len(losses) == 3 and judge.is_close(
        torch.tensor(losses), torch.tensor(want_losses), atol=1e-6, rtol=1e-4
    )
    moved = moved and all(
        judge.is_close(p, q, atol=1e-6, rtol=1e-4) for p, q in zip(params, want_params)
    )
    assert moved, (
        "overfit_one_batch for 3 steps on a model whose .grad still held the gradient of an "
        f"earlier, unrelated backward gave losses {losses}, expected {want_losses} (those of the "
        "same model without it): clear the gradients before every backward (zero_grad first in "
        "each step), or the first step also follows whatever the caller left in .grad"
    )
