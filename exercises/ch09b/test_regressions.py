"""Public tests for ch09b — run with `pytest exercises/ch09b` (add `--impl solutions` to
see the reference pass).

Anything that must stay live (a view, a Parameter, the global random state before a run,
the model make_run builds) is set up inside a @probe, which returns what it observed."""

import builtins
import copy
import re
import struct
from collections import namedtuple

import numpy as np
import pytest
import torch
from torch import nn

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # trusted-side helpers; a graded run's student process has only harness.probe/target
    from harness.evidence import brief
except ImportError:  # there the probes below never need them
    pass

rg = chapter_module("ch09b", "regressions")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "_REAL_HASH _hash_of_another_process _watch"
)

CFG = dict(n=128, d_in=8, hidden=16, lr=0.05, epochs=2, batch_size=32)

# Runs handed to compare_runs: a run is plain data (a named tuple of the same fields).
Run = namedtuple("Run", "losses init_fingerprint order_fingerprint")


def sample(n, mean, sd, seed):
    """n metric values of a normal distribution, fixed by seed (stand-ins for n runs).

    Standardised to exactly this mean and sd, so a shift of k sd is exactly
    k / sqrt(2 / n) standard errors of the difference of two such means."""
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(n, generator=gen, dtype=torch.float64)
    z = (z - z.mean()) / z.std()
    return [mean + sd * float(v) for v in z]


def runs(values, first_seed=0):
    """A seed -> metric mapping for is_regression."""
    return {first_seed + k: v for k, v in enumerate(values)}


def verdict(baseline, candidate) -> bool:
    """is_regression's answer, which must be a boolean (numpy's bool_ is fine)."""
    with because(
        "is_regression raised on legal input (>= 2 runs a side): it must return True or False"
    ):
        answer = rg.is_regression(baseline, candidate)
    assert isinstance(answer, bool | np.bool_), (
        f"is_regression returned {answer!r} ({type(answer).__name__}); it should return True or False"
    )
    return bool(answer)


# ---------------------------------------------------------------- ch09b.1 fingerprint


@probe
def digests_of_equal_values(seed):
    """fingerprint of pairs that hold equal values in different objects and memory layouts
    (built here: as plain data every tensor would arrive as a fresh contiguous copy)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(5, 7, generator=g)
    big = torch.randn(40, 7, generator=g)
    row = torch.randn(1, 7, generator=g)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    twin = copy.deepcopy(model)
    fp = rg.fingerprint
    return {
        "clone": (fp(x), fp(x.clone())),
        "transposed view": (fp(x.t()), fp(x.t().contiguous())),
        "slice of a bigger tensor": (fp(big[10:15]), fp(big[10:15].clone())),
        "expanded row": (fp(row.expand(5, 7)), fp(row.expand(5, 7).contiguous())),
        "state dict of a deepcopy": (fp(model.state_dict()), fp(twin.state_dict())),
    }


_REAL_HASH = builtins.hash


def _hash_of_another_process(obj):
    """What builtins.hash could answer in another interpreter: str and bytes hashes are
    salted per process (PYTHONHASHSEED)."""
    return _REAL_HASH(("another process", obj))


@probe
def digests_under_another_hash_salt(seed):
    """fingerprint of a tensor and a state dict, then again while builtins.hash answers
    as it would in another process; and the fingerprint of the tensor plus one."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(6, generator=g)
    torch.manual_seed(seed)
    sd = nn.Linear(3, 2).state_dict()
    here = (rg.fingerprint(t), rg.fingerprint(sd))
    builtins.hash = _hash_of_another_process
    try:
        there = (rg.fingerprint(t), rg.fingerprint(sd))
    finally:
        builtins.hash = _REAL_HASH
    return here, there, rg.fingerprint(t + 1)


@pytest.mark.task("ch09b.1")
@pytest.mark.points(2)
def test_fingerprint_depends_on_values_not_on_objects():
    torch.manual_seed(0)
    fp = rg.fingerprint(torch.randn(3, 4))
    assert isinstance(fp, str) and len(fp) >= 16 and re.fullmatch(r"[0-9a-f]+", fp.lower()), (
        f"fingerprint(tensor) returned {brief(fp)}; expected a hex digest string "
        "(hashlib.sha256(...).hexdigest()), which is stable across processes"
    )
    with because("fingerprint raised on a view, a slice or a state dict"):
        pairs = digests_of_equal_values(0)
    for what, (a, b) in pairs.items():
        assert a == b, (
            f"fingerprint gave two digests for equal values ({what}): equal values, dtypes and "
            "shapes must give equal fingerprints — hash the logical contents (.contiguous() bytes), "
            "not id(), data_ptr() or the whole underlying storage"
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
    sd = {"0.weight": torch.ones(2, 2), "0.bias": torch.zeros(2)}
    renamed = {"1.weight": torch.ones(2, 2), "1.bias": torch.zeros(2)}
    assert rg.fingerprint(sd) != rg.fingerprint(renamed), (
        "two state dicts with the same tensors under other keys got the same fingerprint: hash the keys too"
    )


@pytest.mark.task("ch09b.1")
def test_fingerprint_does_not_use_pythons_hash():
    here, there, other = digests_under_another_hash_salt(1)
    assert type(here[0]) is str and here[0] != other, (  # a constant is stable vacuously
        f"fingerprint gave {brief(here[0])} for a tensor and {brief(other)} for the tensor plus "
        "one: a fingerprint is a digest string that changes with the values"
    )
    assert here == there, (
        "fingerprint changed when builtins.hash answered as it does in another process: Python's "
        "hash() of str and bytes is salted per process, so a digest built on it is not stable across "
        "runs — use hashlib"
    )


# ---------------------------------------------------------------- ch09b.2 make_run (repair)


def book_data(config):
    """make_data as the reading defines it: from data_seed only (a trusted replica)."""
    gen = torch.Generator().manual_seed(config["data_seed"])
    X = torch.randn(config["n"], config["d_in"], generator=gen)
    w = torch.randn(config["d_in"], 1, generator=gen)
    y = torch.tanh(X @ w) + 0.1 * torch.randn(config["n"], 1, generator=gen)
    return X, y


def full_config(**changes):
    """CFG with changes, every RunConfig field spelled out (data_seed as in RunConfig)."""
    return {"data_seed": 1234, **CFG, **changes}


def book_init(config, seed):
    """The weights build_model(config) gives right after torch.manual_seed(seed)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = nn.Sequential(
            nn.Linear(config["d_in"], config["hidden"]), nn.Tanh(), nn.Linear(config["hidden"], 1)
        )
        return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _watch(namespace, built, inputs):
    """A build_model for make_run's module that records the model's initial weights and
    the input of every forward made with autograd on (the training steps)."""
    original = namespace["build_model"]

    def build_and_watch(config):
        model = original(config)
        built.append({k: v.detach().clone() for k, v in model.state_dict().items()})

        def record(module, args):
            if torch.is_grad_enabled():
                inputs.append(args[0].detach().clone())

        model.register_forward_pre_hook(record)
        return model

    return original, build_and_watch


@probe
def watched_run(fields, seed, noise):
    """make_run(RunConfig(**fields), seed) after `noise` draws from torch's global random
    state, with build_model watched: (result, initial weights of each model built, the input
    of each training forward)."""
    config = rg.RunConfig(**fields)
    torch.manual_seed(10_000 + noise)
    torch.rand(noise)
    namespace = rg.make_run.__globals__
    built, inputs = [], []
    original, watched = _watch(namespace, built, inputs)
    namespace["build_model"] = watched
    try:
        result = rg.make_run(config, seed)
    finally:
        namespace["build_model"] = original
    return result, built, inputs


def run_of(fields, seed, noise=0):
    """watched_run, judged: (result, initial weights, visits as lists of example indices)."""
    with because(f"make_run(RunConfig(**{fields}), seed={seed}) raised"):
        result, built, inputs = watched_run(fields, seed, noise)
    assert len(built) >= 1, (
        "make_run never called build_model(config): train the model build_model builds"
    )
    return result, built[0], visits_of(fields, inputs)


def visits_of(fields, inputs):
    """Which rows of make_data's X each training forward was fed, as index lists."""
    X, _ = book_data(fields)
    where = {row.numpy().tobytes(): i for i, row in enumerate(X)}
    visits = []
    for batch in inputs:
        rows = batch.reshape(-1, fields["d_in"])
        found = [where.get(row.numpy().tobytes()) for row in rows]
        assert None not in found, (
            f"make_run fed the model a batch ({brief(batch)}) whose rows are not rows of "
            "make_data(config)'s X: train on the experiment's fixed data"
        )
        visits.append(found)
    return visits


def same_state(a, b):
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and judge.is_equal(a[k], b[k])
        for k in a
    )


def bits(losses):
    return [struct.pack("<d", float(v)) for v in losses]


@pytest.mark.task("ch09b.2")
@pytest.mark.points(3)
def test_two_calls_are_bitwise_identical():
    fields = full_config()
    a, init_a, visits_a = run_of(fields, 3, noise=0)
    b, init_b, visits_b = run_of(fields, 3, noise=17)  # other random numbers drawn before
    assert same_state(init_a, init_b) and a.init_fingerprint == b.init_fingerprint, (
        "make_run(config, seed=3) twice, with other random numbers drawn before each call, started "
        "from different weights: the model is built from whatever the global random state was — "
        "seed (torch.manual_seed(seed)) before building the model"
    )
    assert visits_a == visits_b and a.order_fingerprint == b.order_fingerprint, (
        "make_run(config, seed=3) twice visited the data in different orders: shuffle with a "
        "generator seeded from the seed (torch.Generator().manual_seed(seed)), so that two calls "
        "are bitwise identical"
    )
    assert len(a.losses) == len(visits_a) and bits(a.losses) == bits(b.losses), (
        "make_run(config, seed=3) twice gave losses that are not bit-for-bit equal (or not one per "
        f"step: {len(a.losses)} losses for {len(visits_a)} training steps)"
    )


@pytest.mark.task("ch09b.2")
@pytest.mark.points(2)
def test_initial_weights_come_from_the_seed():
    fields = full_config()
    _, init, _ = run_of(fields, 5, noise=3)
    assert same_state(init, book_init(fields, 5)), (
        "make_run(config, seed=5) did not start from the weights build_model(config) gives right "
        "after torch.manual_seed(5): seed first, then build the model"
    )


@pytest.mark.task("ch09b.2")
@pytest.mark.points(2)
def test_seeds_vary_both_the_weights_and_the_order():
    seen = [run_of(full_config(), s) for s in (0, 1, 2)]
    inits = {r.init_fingerprint for r, _, _ in seen}
    orders = {str(v) for _, _, v in seen}
    assert len(inits) == 3, (
        f"seeds 0, 1, 2 gave {len(inits)} distinct initial weights; each seed should give its own"
    )
    assert len(orders) == 3 and len({r.order_fingerprint for r, _, _ in seen}) == 3, (
        f"seeds 0, 1, 2 visited the data in {len(orders)} distinct order(s): a torch.Generator() "
        "that is never seeded starts from the same default seed every time, so every run shuffles "
        "alike and the seed-to-seed spread looks smaller than it is — seed the shuffling generator "
        "from the seed"
    )


# ---------------------------------------------------------------- ch09b.3 compare_runs


def named_step(entry):
    """The step number a 'losses' entry names ('... step 3 ...'), or None."""
    m = re.search(r"\bstep\D{0,3}?(\d+)", entry)
    return int(m.group(1)) if m else None


def entries(comparison, field):
    return [d for d in comparison.differences if d.startswith(field)]


@pytest.mark.task("ch09b.3")
@pytest.mark.points(2)
def test_compare_runs_names_what_differs():
    base = Run([0.9, 0.7, 0.6, 0.5, 0.45], "a1", "b1")
    same = rg.compare_runs(base, Run(list(base.losses), "a1", "b1"))
    assert same.comparable and list(same.differences) == [], (
        f"compare_runs of two identical runs returned {same}; expected comparable=True, differences=[]"
    )
    c = rg.compare_runs(base, Run([0.9, 0.7, 0.6, 0.51, 0.46], "a1", "b1"))
    loss = entries(c, "losses")
    assert c.comparable and len(c.differences) == 1 and loss and named_step(loss[0]) == 3, (
        f"two runs with the same init and order whose losses first differ at step 3 gave {c}; "
        "expected comparable=True and one entry starting 'losses' that names 'step 3' (steps "
        "counted from 0)"
    )
    other_init = rg.compare_runs(base, Run(list(base.losses), "a2", "b1"))
    assert not other_init.comparable and entries(other_init, "init_fingerprint"), (
        f"two runs with different initial weights gave {other_init}; they are not comparable bit "
        "for bit, and an entry starting 'init_fingerprint' should say why"
    )


@pytest.mark.task("ch09b.3")
def test_compare_runs_reports_each_field_once():
    a = Run([0.5, 0.4, 0.3, 0.2], "i1", "o1")
    b = Run([0.6, 0.45, 0.35, 0.25], "i2", "o2")
    c = rg.compare_runs(a, b)
    counts = {f: len(entries(c, f)) for f in ("init_fingerprint", "order_fingerprint", "losses")}
    assert not c.comparable and counts == dict.fromkeys(counts, 1), (
        f"runs differing in init, order and every loss gave {c}: expected comparable=False and "
        "exactly one entry per differing field (one 'losses' entry, naming the first step)"
    )
    assert named_step(entries(c, "losses")[0]) == 0, (
        f"losses differing from the very first step were reported as {entries(c, 'losses')[0]!r}; "
        "the entry must name step 0 (steps counted from 0)"
    )


# ---------------------------------------------------------------- ch09b.4 is_regression


@pytest.mark.task("ch09b.4")
@pytest.mark.points(2)
def test_regression_is_judged_against_seed_noise():
    base = runs(sample(8, 0.20, 0.02, seed=0))
    same = runs(sample(8, 0.20, 0.02, seed=1), 8)
    worse = runs(sample(8, 0.28, 0.02, seed=1), 8)
    assert not verdict(base, same), (
        "is_regression flagged a candidate drawn from the same distribution as the baseline (mean 0.20, "
        "sd 0.02 over seeds): differences of this size are seed-to-seed noise"
    )
    assert verdict(base, worse), (
        "is_regression missed a candidate whose metric is 4 seed-standard-deviations worse on every seed "
        "(0.28 vs 0.20, sd 0.02): compare the shift of the means with the seed-to-seed noise of those "
        "means"
    )


@pytest.mark.task("ch09b.4")
@pytest.mark.points(2)
def test_many_seeds_resolve_a_shift_smaller_than_the_spread():
    base = runs(sample(100, 0.20, 0.02, seed=10))
    worse = runs(sample(100, 0.217, 0.02, seed=11), 100)  # 0.85 sd: 6 standard errors
    barely = runs(sample(100, 0.205, 0.02, seed=11), 100)  # 0.25 sd: about 1.8 standard errors
    assert verdict(base, worse), (
        "with 100 seeds a side, a candidate 0.85 seed-standard-deviations worse (0.217 vs 0.200, sd "
        "0.02) is 6 standard errors out: a mean over n runs varies sqrt(n) times less than "
        "one run, so compare the shift with the standard error sqrt(var_b/n_b + var_c/n_c), not "
        "with the spread of single runs"
    )
    assert not verdict(base, barely), (
        "with 100 seeds a side, a shift of 0.25 sd (about 1.8 standard errors) was called a "
        "regression: that is within what seed noise produces — use a strict threshold"
    )


@pytest.mark.task("ch09b.4")
def test_a_single_unlucky_run_is_not_a_regression():
    base = runs(sample(8, 0.20, 0.02, seed=2))
    cand = runs(sample(8, 0.20, 0.02, seed=3), 8)
    cand[15] = 0.32  # one run six standard deviations worse
    assert not verdict(base, cand), (
        "one candidate run far out in the tail (0.32 against a 0.20 +- 0.02 baseline) made is_regression say "
        "True although the other seven runs match the baseline: one run is not a shifted distribution"
    )
    with pytest.raises(ValueError):
        rg.is_regression({0: 0.20}, {0: 0.30})  # a single pair of runs cannot measure the noise
