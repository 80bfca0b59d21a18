"""Public tests for ch09b — run with `pytest exercises/ch09b` (add `--impl solutions` to
see the reference pass)."""

import copy
import re

import numpy as np
import pytest
import torch

from harness.target import chapter_module

rg = chapter_module("ch09b", "regressions")

CFG = dict(n=128, d_in=8, hidden=16, lr=0.05, epochs=2, batch_size=32)


def config(**changes):
    return rg.RunConfig(**{**CFG, **changes})


def sample(n, mean, sd, seed):
    """n metric values of a normal distribution, fixed by seed (stand-ins for n runs)."""
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(n, generator=gen, dtype=torch.float64)
    z = (z - z.mean()) / z.std()  # exactly mean 0, sd 1: the cases below are clear-cut
    return [mean + sd * float(v) for v in z]


def verdict(baseline, candidate) -> bool:
    """is_regression's answer, which must be a boolean (numpy's bool_ is fine)."""
    answer = rg.is_regression(baseline, candidate)
    assert isinstance(answer, (bool, np.bool_)), (
        f"is_regression returned {answer!r} ({type(answer).__name__}); it should return True or False"
    )
    return bool(answer)


# ---------------------------------------------------------------- ch09b.1 fingerprint


@pytest.mark.task("ch09b.1")
@pytest.mark.points(2)
def test_fingerprint_depends_on_values_not_on_objects():
    torch.manual_seed(0)
    t = torch.randn(3, 4)
    fp = rg.fingerprint(t)
    assert isinstance(fp, str) and len(fp) >= 16 and int(fp, 16) >= 0, (
        f"fingerprint(tensor) returned {fp!r}; expected a hex digest string (e.g. hashlib.sha256(...).hexdigest()), "
        "which is stable across processes — Python's hash() is not"
    )
    assert rg.fingerprint(t.clone()) == fp, (
        "fingerprint(t) and fingerprint(t.clone()) differ: equal values must give equal fingerprints "
        "(hash the tensor's contents, not id() or the storage address)"
    )
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    twin = copy.deepcopy(model)
    assert rg.fingerprint(model.state_dict()) == rg.fingerprint(twin.state_dict()), (
        "two models with identical weights (a deepcopy) have different state_dict fingerprints: "
        "hash keys and tensor contents, not the objects"
    )


@pytest.mark.task("ch09b.1")
@pytest.mark.points(2)
def test_fingerprint_sees_every_value_dtype_and_shape():
    t = torch.linspace(0, 1, 2000)
    nudged = t.clone()
    nudged[1000] = torch.nextafter(nudged[1000], torch.tensor(2.0))
    assert rg.fingerprint(nudged) != rg.fingerprint(t), (
        "changing one of 2000 values by one float step left the fingerprint unchanged: hash every byte "
        "of the data (str(tensor) elides and rounds)"
    )
    swapped = t.clone()
    swapped[[3, 4]] = swapped[[4, 3]]
    assert rg.fingerprint(swapped) != rg.fingerprint(t), (
        "swapping two values left the fingerprint unchanged: a sum or other summary is not a fingerprint"
    )
    zi, zf = torch.zeros(4, dtype=torch.int32), torch.zeros(4, dtype=torch.float32)
    assert rg.fingerprint(zi) != rg.fingerprint(zf), (
        "int32 zeros and float32 zeros (the same 16 bytes) got the same fingerprint: include the dtype"
    )
    assert rg.fingerprint(torch.zeros(2, 3)) != rg.fingerprint(torch.zeros(3, 2)), (
        "zeros(2, 3) and zeros(3, 2) got the same fingerprint: include the shape"
    )


# ---------------------------------------------------------------- ch09b.2 make_run (repair)


@pytest.mark.task("ch09b.2")
@pytest.mark.points(2)
def test_two_calls_are_bitwise_identical():
    torch.manual_seed(1)
    a = rg.make_run(config(), 3)
    torch.rand(17)  # whatever happened before the call ...
    b = rg.make_run(config(), 3)  # ... must not matter
    assert a.init_fingerprint == b.init_fingerprint, (
        "make_run(config, seed=3) twice gave different initial weights: the model is built from whatever "
        "the global random state was — seed (torch.manual_seed(seed)) before building the model"
    )
    assert a.order_fingerprint == b.order_fingerprint and a.losses == b.losses, (
        "make_run(config, seed=3) twice gave different data orders or losses: shuffle with a generator "
        "seeded from the seed, so that two calls are bitwise identical"
    )


@pytest.mark.task("ch09b.2")
def test_initial_weights_come_from_the_seed():
    result = rg.make_run(config(), 5)
    torch.manual_seed(5)
    expected = rg.fingerprint(rg.build_model(config()).state_dict())
    assert result.init_fingerprint == expected, (
        "make_run(config, seed=5) did not start from the model that build_model(config) gives right after "
        "torch.manual_seed(5): seed first, then build the model"
    )


@pytest.mark.task("ch09b.2")
def test_seeds_vary_both_the_weights_and_the_order():
    runs = [rg.make_run(config(), s) for s in (0, 1, 2)]
    inits = {r.init_fingerprint for r in runs}
    orders = {r.order_fingerprint for r in runs}
    assert len(inits) == 3, (
        f"seeds 0, 1, 2 gave {len(inits)} distinct initial weights; each seed should give its own"
    )
    assert len(orders) == 3, (
        f"seeds 0, 1, 2 gave {len(orders)} distinct data orders: a torch.Generator() that is never seeded "
        "starts from the same default seed every time, so every run shuffles alike and the seed-to-seed "
        "spread looks smaller than it is — seed the shuffling generator from the seed"
    )


# ---------------------------------------------------------------- ch09b.3 compare_runs


@pytest.mark.task("ch09b.3")
@pytest.mark.points(2)
def test_compare_runs_names_what_differs():
    base = rg.RunResult([0.9, 0.7, 0.6, 0.5, 0.45], "a1", "b1")
    same = rg.compare_runs(base, rg.RunResult(list(base.losses), "a1", "b1"))
    assert same.comparable and list(same.differences) == [], (
        f"compare_runs of two identical runs returned {same}; expected comparable=True, differences=[]"
    )
    later = rg.RunResult([0.9, 0.7, 0.6, 0.51, 0.46], "a1", "b1")
    c = rg.compare_runs(base, later)
    loss_entries = [d for d in c.differences if d.startswith("losses")]
    assert (
        c.comparable
        and len(c.differences) == 1
        and loss_entries
        and re.search(r"\b3\b", loss_entries[0])
    ), (
        f"two runs with the same init and order whose losses first differ at step 3 gave {c}; expected "
        "comparable=True and one entry starting 'losses' that names step 3 (steps counted from 0)"
    )
    other_init = rg.compare_runs(base, rg.RunResult(list(base.losses), "a2", "b1"))
    assert not other_init.comparable and any(
        d.startswith("init_fingerprint") for d in other_init.differences
    ), (
        f"two runs with different initial weights gave {other_init}; they are not comparable bit for bit, "
        "and an entry starting 'init_fingerprint' should say why"
    )


# ---------------------------------------------------------------- ch09b.4 is_regression


@pytest.mark.task("ch09b.4")
@pytest.mark.points(2)
def test_regression_is_judged_against_seed_noise():
    base = dict(enumerate(sample(8, 0.20, 0.02, seed=0)))
    same = dict(zip(range(8, 16), sample(8, 0.20, 0.02, seed=1)))
    worse = dict(zip(range(8, 16), sample(8, 0.28, 0.02, seed=1)))
    assert not verdict(base, same), (
        "is_regression flagged a candidate drawn from the same distribution as the baseline (mean 0.20, "
        "sd 0.02 over seeds): differences of this size are seed-to-seed noise"
    )
    assert verdict(base, worse), (
        "is_regression missed a candidate whose metric is 4 seed-standard-deviations worse on every seed "
        "(0.28 vs 0.20, sd 0.02): compare the shift of the means with the seed-to-seed noise of those "
        "means — a mean over 8 runs varies sqrt(8) times less than a single run"
    )


@pytest.mark.task("ch09b.4")
def test_a_single_unlucky_run_is_not_a_regression():
    base = dict(enumerate(sample(8, 0.20, 0.02, seed=2)))
    cand = dict(zip(range(8, 16), sample(8, 0.20, 0.02, seed=3)))
    cand[15] = 0.32  # one run six standard deviations worse
    assert not verdict(base, cand), (
        "one candidate run far out in the tail (0.32 against a 0.20 +- 0.02 baseline) made is_regression say "
        "True although the other seven runs match the baseline: one run is not a shifted distribution"
    )
    with pytest.raises(ValueError):
        rg.is_regression({0: 0.20}, {0: 0.30})  # a single pair of runs cannot measure the noise
