"""Hidden tests for ch09b: other objects, configurations, seeds and noise levels than the
public ones. Messages state the violated property, not the test."""

import re

import pytest
import torch

from exercises.ch09b.test_regressions import sample, verdict  # helpers shared with the public twin
from harness.target import chapter_module

rg = chapter_module("ch09b", "regressions")


def config(**changes):
    return rg.RunConfig(
        **{**dict(n=96, d_in=6, hidden=12, lr=0.08, epochs=2, batch_size=16), **changes}
    )


# ---------------------------------------------------------------- ch09b.1


@pytest.mark.task("ch09b.1")
def test_fingerprint_ignores_layout_and_autograd_flags():
    x = torch.arange(12.0).reshape(3, 4)
    assert rg.fingerprint(x.t()) == rg.fingerprint(x.t().contiguous()), (
        "a transposed view and its contiguous copy hold the same values in the same shape, so their "
        "fingerprints must agree (hash the logical values, not the storage)"
    )
    p = torch.nn.Parameter(torch.randn(5))
    assert rg.fingerprint(p) == rg.fingerprint(p.detach().clone()), (
        "a parameter and a detached copy of it must have the same fingerprint"
    )
    nested = {"w": [torch.ones(2), torch.zeros(2)], "step": torch.tensor(3)}
    twin = {"w": [torch.ones(2), torch.zeros(2)], "step": torch.tensor(3)}
    assert rg.fingerprint(nested) == rg.fingerprint(twin), (
        "equal nested containers of tensors must have equal fingerprints"
    )


@pytest.mark.task("ch09b.1")
def test_fingerprint_sees_keys_order_and_narrow_dtypes():
    sd = {"a.weight": torch.ones(2, 2), "b.weight": torch.ones(2, 2)}
    renamed = {"a.weight": torch.ones(2, 2), "c.weight": torch.ones(2, 2)}
    assert rg.fingerprint(sd) != rg.fingerprint(renamed), (
        "a renamed state-dict key must change the fingerprint"
    )
    a, b = torch.zeros(3), torch.ones(3)
    assert rg.fingerprint([a, b]) != rg.fingerprint([b, a]), (
        "the order of the tensors in a list must change the fingerprint"
    )
    assert rg.fingerprint(torch.zeros(4, dtype=torch.float16)) != rg.fingerprint(
        torch.zeros(2, dtype=torch.float32)
    ), "float16 zeros(4) and float32 zeros(2) (the same 8 bytes) must have different fingerprints"
    big = torch.randn(50, 50)
    changed = big.clone()
    changed[25, 25] += 1e-3
    assert rg.fingerprint(big) != rg.fingerprint(changed), (
        "a small change of one value in a large tensor must change the fingerprint"
    )


# ---------------------------------------------------------------- ch09b.2


@pytest.mark.task("ch09b.2")
def test_runs_repeat_whatever_the_global_state():
    results = []
    for noise in (0, 1, 2):
        torch.manual_seed(100 + noise)
        torch.randn(noise * 10 + 1)
        results.append(rg.make_run(config(), 11))
    assert len({r.init_fingerprint for r in results}) == 1, (
        "the initial weights of make_run(config, seed) depend on the global random state before the call"
    )
    assert len({r.order_fingerprint for r in results}) == 1 and all(
        r.losses == results[0].losses for r in results
    ), "the data order or losses of make_run(config, seed) are not reproducible across calls"


@pytest.mark.task("ch09b.2")
def test_data_order_depends_on_the_seed_not_on_the_model():
    narrow, wide = rg.make_run(config(hidden=4), 7), rg.make_run(config(hidden=40), 7)
    assert narrow.order_fingerprint == wide.order_fingerprint, (
        "with the same seed, changing only the model width changed the data order: the shuffle must "
        "come from its own generator seeded from the seed, not from the global state the model consumed"
    )
    assert narrow.init_fingerprint != wide.init_fingerprint, (
        "models of different widths cannot share initial weights"
    )
    orders = {rg.make_run(config(), s).order_fingerprint for s in (21, 22, 23, 24)}
    assert len(orders) == 4, "different seeds must shuffle the data differently"


# ---------------------------------------------------------------- ch09b.3


@pytest.mark.task("ch09b.3")
def test_compare_runs_on_order_and_length():
    base = rg.RunResult([1.0] * 20, "i", "o")
    c = rg.compare_runs(base, rg.RunResult([1.0] * 20, "i", "o2"))
    assert not c.comparable and any(d.startswith("order_fingerprint") for d in c.differences), (
        "runs that visit the data in different orders are not comparable bit for bit, and the order must be named"
    )
    assert not any(d.startswith("losses") for d in c.differences), (
        "equal losses must not be reported as a difference"
    )
    c = rg.compare_runs(base, rg.RunResult([1.0] * 12, "i", "o"))
    loss = [d for d in c.differences if d.startswith("losses")]
    assert loss and "12" in loss[0], (
        "losses of different lengths must be reported, naming the first step present in only one run"
    )


@pytest.mark.task("ch09b.3")
def test_compare_runs_is_bitwise_with_nan():
    nan = float("nan")
    a = rg.RunResult([0.5, 0.4, nan, nan], "i", "o")
    c = rg.compare_runs(a, rg.RunResult([0.5, 0.4, nan, nan], "i", "o"))
    assert c.comparable and list(c.differences) == [], (
        "two runs that diverged to nan at the same steps are bitwise identical: nan must compare equal to nan here"
    )
    c = rg.compare_runs(a, rg.RunResult([0.5, 0.4 + 1e-12, nan, nan], "i", "o"))
    loss = [d for d in c.differences if d.startswith("losses")]
    assert loss and re.search(r"\b1\b", loss[0]), (
        "a difference in the last bits of a loss must be reported with its step (counted from 0)"
    )


# ---------------------------------------------------------------- ch09b.4


@pytest.mark.task("ch09b.4")
def test_the_threshold_scales_with_the_noise():
    quiet = dict(enumerate(sample(10, 1.0, 0.01, seed=4)))
    noisy = dict(enumerate(sample(10, 1.0, 1.0, seed=4)))
    shift = lambda runs, d: {s + 100: v + d for s, v in runs.items()}  # noqa: E731
    assert verdict(quiet, shift(quiet, 0.3)), (
        "a shift of 0.3 is thirty seed-standard-deviations when runs vary by 0.01: that is a regression"
    )
    assert not verdict(noisy, shift(noisy, 0.3)), (
        "a shift of 0.3 is noise when runs vary by 1.0 from seed to seed: the decision must scale with the spread"
    )
    assert not verdict(quiet, shift(quiet, -0.3)), "a candidate that is better is not a regression"


@pytest.mark.task("ch09b.4")
def test_a_lucky_baseline_run_does_not_count():
    base = dict(enumerate(sample(8, 0.5, 0.05, seed=6)))
    base[7] = 0.2  # one baseline run six standard deviations better than the rest
    cand = dict(zip(range(10, 18), sample(8, 0.5, 0.05, seed=7)))
    assert not verdict(base, cand), (
        "the candidate matches the baseline's typical runs; only one exceptionally lucky baseline run is "
        "better — comparing against the best run, or one pair of runs, mistakes luck for a regression"
    )
    for one_side, other_side in (({0: 0.5}, cand), (base, {10: 0.9})):
        try:
            rg.is_regression(one_side, other_side)
        except ValueError:
            continue
        raise AssertionError(
            "with a single run on one side is_regression must raise ValueError: one run cannot "
            "measure that side's seed-to-seed noise"
        )


@pytest.mark.task("ch09b.4")
def test_measured_runs_of_a_real_change():
    # final losses measured with the reference make_run (RunConfig(), last epoch mean) for lr 0.05
    # (seeds 0-7), a rerun with other seeds (8-15), and the changed lr 0.03 (seeds 8-15)
    base = {0: 0.1631, 1: 0.2354, 2: 0.1827, 3: 0.2007, 4: 0.1719, 5: 0.2154, 6: 0.1912, 7: 0.1742}
    rerun = {
        8: 0.2024,
        9: 0.1934,
        10: 0.1925,
        11: 0.2432,
        12: 0.2238,
        13: 0.2403,
        14: 0.1749,
        15: 0.1942,
    }
    slower = {
        8: 0.325,
        9: 0.2618,
        10: 0.2696,
        11: 0.3926,
        12: 0.3307,
        13: 0.362,
        14: 0.2021,
        15: 0.3006,
    }
    assert not verdict(base, rerun), (
        "rerunning the same configuration with other seeds is not a regression"
    )
    assert verdict(base, slower), (
        "a configuration whose mean metric is about five standard errors worse than the baseline's "
        "(8 seeds a side) is a regression"
    )
