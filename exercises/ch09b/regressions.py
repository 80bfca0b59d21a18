"""ch09b — Regressions and reproducible experiments: runs that repeat bit for bit,
fingerprints that say what changed, and a regression call made against seed-to-seed noise.
Read course/ch09b.md, then replace each NotImplementedError and repair make_run."""

from __future__ import annotations

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


def fingerprint(obj) -> str:
    """A stable hex digest of a tensor, a state dict, or a list/tuple/dict of them.

    Equal values, dtypes, shapes (and keys) give equal digests, whatever the objects'
    identity or memory layout; any change of a value, dtype, shape or key changes it.
    """
    raise NotImplementedError("ch09b.1 fingerprint — see course/ch09b.md#fingerprints")


def make_run(config: RunConfig, seed: int) -> RunResult:
    """Train ``build_model(config)`` on ``make_data(config)`` with minibatch SGD and MSE.

    Seeds torch's global state with ``seed`` *before* the model is built, and shuffles each
    epoch with a generator seeded from ``seed``: two calls with equal arguments give
    bitwise-identical results, whatever random numbers were drawn before the call.
    """
    X, y = make_data(config)
    model = build_model(config)  # TODO(ch09b.2, repair)
    init_fingerprint = fingerprint(model.state_dict())
    torch.manual_seed(seed)  # TODO(ch09b.2, repair)
    order_gen = torch.Generator()  # TODO(ch09b.2, repair)
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


def compare_runs(a: RunResult, b: RunResult) -> Comparison:
    """Compare two runs field by field. ``comparable`` iff their init and order fingerprints
    agree; losses are compared bitwise (nan equals nan) and their entry names the first step
    that differs, e.g. "losses: first differ at step 3 (0.52 vs 0.53)"."""
    raise NotImplementedError("ch09b.3 compare_runs — see course/ch09b.md#comparing-two-runs")


def is_regression(
    baseline_by_seed: Mapping[int, float], candidate_by_seed: Mapping[int, float]
) -> bool:
    """Is the candidate's metric (lower is better) worse than the baseline's by more than
    seed-to-seed noise explains? Each maps seed -> metric of one run; needs >= 2 runs a side
    (ValueError otherwise). One-sided: an improvement is never a regression."""
    raise NotImplementedError("ch09b.4 is_regression — see course/ch09b.md#is-it-a-regression")
