"""ch09b — Regressions and reproducible experiments: runs that repeat bit for bit,
fingerprints that say what changed, and a regression call made against seed-to-seed noise.
Reference solution."""

from __future__ import annotations

import hashlib
import math
import statistics
import struct
from collections.abc import Mapping
from typing import NamedTuple

import torch
import torch.nn as nn


class RunConfig(NamedTuple):
    """A small regression experiment: data size and shape, model width, optimizer, schedule.
    Immutable; change a field with ``config._replace(lr=0.03)`` or ``RunConfig(lr=0.03)``."""

    n: int = 256
    d_in: int = 8
    hidden: int = 16
    lr: float = 0.05
    epochs: int = 4
    batch_size: int = 32
    data_seed: int = 1234  # the data is part of the experiment, fixed across run seeds


class RunResult(NamedTuple):
    """One run: the loss of every step, a fingerprint of the initial weights and one of the
    order in which the examples were visited."""

    losses: list[float]
    init_fingerprint: str
    order_fingerprint: str


class Comparison(NamedTuple):
    """``comparable``: both runs started from the same weights and saw the data in the same
    order; ``differences``: one entry per differing field, each starting with the field name."""

    comparable: bool
    differences: list[str]


def make_data(config: RunConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """The experiment's fixed data: X (n, d_in) and y (n, 1), float32, from ``config.data_seed`` only."""
    gen = torch.Generator().manual_seed(config.data_seed)
    X = torch.randn(config.n, config.d_in, generator=gen)
    w = torch.randn(config.d_in, 1, generator=gen)
    y = torch.tanh(X @ w) + 0.1 * torch.randn(config.n, 1, generator=gen)
    return X, y


def build_model(config: RunConfig) -> nn.Module:
    """A two-layer MLP d_in -> hidden -> 1, initialized from torch's global random state."""
    return nn.Sequential(
        nn.Linear(config.d_in, config.hidden), nn.Tanh(), nn.Linear(config.hidden, 1)
    )


def _feed(h, obj) -> None:
    """Write an unambiguous, typed encoding of ``obj`` into the hash ``h``."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}:".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, Mapping):
        h.update(f"M{len(obj)}:".encode())
        for key, value in obj.items():
            _feed(h, key)
            _feed(h, value)
    elif isinstance(obj, (list, tuple)):
        h.update(f"L{len(obj)}:".encode())
        for item in obj:
            _feed(h, item)
    elif isinstance(obj, str):
        h.update(f"S{len(obj)}:{obj}".encode())
    elif isinstance(obj, (bool, int, float)) or obj is None:
        h.update(f"P{type(obj).__name__}:{obj!r};".encode())
    else:
        raise TypeError(f"fingerprint cannot hash a {type(obj).__name__}")


def fingerprint(obj) -> str:
    """A stable hex digest of a tensor, a state dict, or a list/tuple/dict of them.

    Equal values, dtypes, shapes (and keys) give equal digests, whatever the objects'
    identity or memory layout; any change of a value, dtype, shape or key changes it.
    """
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def make_run(config: RunConfig, seed: int) -> RunResult:
    """Train ``build_model(config)`` on ``make_data(config)`` with minibatch SGD and MSE.

    Seeds torch's global state with ``seed`` *before* the model is built, and shuffles each
    epoch with a generator seeded from ``seed``: two calls with equal arguments give
    bitwise-identical results, whatever random numbers were drawn before the call.
    """
    X, y = make_data(config)
    torch.manual_seed(seed)
    model = build_model(config)
    init_fingerprint = fingerprint(model.state_dict())
    order_gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    losses, orders = [], []
    for _ in range(config.epochs):
        order = torch.randperm(config.n, generator=order_gen)
        orders.append(order)
        for start in range(0, config.n, config.batch_size):
            idx = order[start : start + config.batch_size]
            loss = ((model(X[idx]) - y[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return RunResult(losses, init_fingerprint, fingerprint(orders))


def _same_float(a: float, b: float) -> bool:
    return struct.pack("<d", a) == struct.pack("<d", b)  # bitwise: nan equals nan


def compare_runs(a: RunResult, b: RunResult) -> Comparison:
    """Compare two runs field by field. ``comparable`` iff their init and order fingerprints
    agree; losses are compared bitwise (nan equals nan) and their entry names the first step
    that differs, e.g. "losses: first differ at step 3 (0.52 vs 0.53)"."""
    differences = []
    if a.init_fingerprint != b.init_fingerprint:
        differences.append("init_fingerprint: the runs start from different weights")
    if a.order_fingerprint != b.order_fingerprint:
        differences.append("order_fingerprint: the runs visit the data in different orders")
    for step, (la, lb) in enumerate(zip(a.losses, b.losses)):
        if not _same_float(la, lb):
            differences.append(f"losses: first differ at step {step} ({la!r} vs {lb!r})")
            break
    else:
        if len(a.losses) != len(b.losses):
            n = min(len(a.losses), len(b.losses))
            differences.append(
                f"losses: first differ at step {n} (lengths {len(a.losses)} vs {len(b.losses)})"
            )
    comparable = a.init_fingerprint == b.init_fingerprint and (
        a.order_fingerprint == b.order_fingerprint
    )
    return Comparison(comparable, differences)


def is_regression(
    baseline_by_seed: Mapping[int, float], candidate_by_seed: Mapping[int, float]
) -> bool:
    """Is the candidate's metric (lower is better) worse than the baseline's by more than
    seed-to-seed noise explains? Each maps seed -> metric of one run; needs >= 2 runs a side
    (ValueError otherwise). One-sided: an improvement is never a regression."""
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError(
            "is_regression needs at least 2 runs per side: one run cannot measure seed-to-seed noise"
        )
    diff = statistics.fmean(cand) - statistics.fmean(base)
    se = math.sqrt(statistics.variance(base) / len(base) + statistics.variance(cand) / len(cand))
    # no noise: every run of a side gave one value; compare those, not means that may round
    if se == 0.0:
        return cand[0] > base[0]
    return diff / se > 3.0  # Welch's t statistic, a deliberately strict threshold
