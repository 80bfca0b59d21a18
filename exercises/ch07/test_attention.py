"""Public tests for ch07 — run with `pytest exercises/ch07` (add `--impl solutions` to
see the reference pass).

The functions of ch07.1-ch07.5 take and return tensors, so the tests call them directly.
The module of ch07.6 is live: the probes below build it, run it and hand back plain
observations (outputs, weights, gradients); the tests judge them against PyTorch."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # for messages, on the trusted side; the grader's student process neither has nor needs it
    from harness.evidence import brief, first_difference
except ImportError:
    pass

at = chapter_module("ch07", "attention")
PROBES_USE = "PARAM_NAMES build"  # what the probes use besides themselves (harness/strip.py)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- reading a head split


def describe_split(x: torch.Tensor, got: torch.Tensor, n_heads: int) -> str:
    """What a split of an arange input ``x`` [B, T, E] put into head 0, in words.

    Every value of ``x`` names its place: value v sits at position (v // E) % T and
    feature v % E. So the numbers head 0 received say which positions and features it
    got, and the sentence describes exactly that.
    """
    B, T, E = x.shape
    Dh = E // n_heads
    shape = tuple(got.shape)
    if shape == (B, T, n_heads, Dh) and shape != (B, n_heads, T, Dh):
        return (
            f"the result has shape {list(shape)} = [B, T, H, Dh]: the last axis was split into "
            "heads, but the head axis is still behind time; move it in front with transpose(1, 2)"
        )
    if shape != (B, n_heads, T, Dh):
        return (
            f"shape {list(shape)} instead of [B, H, T, Dh] = {[B, n_heads, T, Dh]}: split the last "
            "axis with view(B, T, H, Dh), then move the head axis in front of time with transpose(1, 2)"
        )
    values = [int(v) for v in got[0, 0].flatten().tolist()]
    positions = sorted({(v // E) % T for v in values})
    features = sorted({v % E for v in values})
    if positions == list(range(T)) and features == list(range(Dh)):
        return (
            f"head 0 holds the right numbers in the wrong places: its row for position 1 is "
            f"{got[0, 0, 1].int().tolist()}, but position 1's features 0..{Dh - 1} are "
            f"{x[0, 1, :Dh].int().tolist()} — time and features are interleaved, which is what "
            "transposing [B, T, E] before splitting E does. view(B, T, H, Dh) first, then transpose(1, 2)"
        )
    if len(positions) == 1 and len(features) == E:
        return (
            f"head 0 holds all {E} features of position {positions[0]} and nothing of any other "
            "position: that is the [B, T, H, Dh] layout read as [B, H, T, Dh] (a view into heads "
            "without transpose(1, 2), or a reshape when T == H). Each head needs its slice of "
            "every position: view(B, T, H, Dh), then transpose(1, 2)"
        )
    if len(positions) < T and len(features) == E:
        return (
            f"head 0 holds {got[0, 0].int().tolist()}: all {E} features of positions {positions}, "
            f"the first {T * Dh} numbers of memory. A reshape regroups memory in order; to give "
            "each head a slice of every position's features use view(B, T, H, Dh), then transpose(1, 2)"
        )
    return (
        f"head 0's row for position 1 holds {got[0, 0, 1].tolist()}, expected position 1's "
        f"features 0..{Dh - 1}: {x[0, 1, :Dh].tolist()}"
    )


def heads_of(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """The correct split, written as slices: head h is x[..., h*Dh:(h+1)*Dh]."""
    Dh = x.shape[-1] // n_heads
    return torch.stack([x[..., h * Dh : (h + 1) * Dh] for h in range(n_heads)], dim=1)


# ---------------------------------------------------------------- ch07.1 split_heads


@pytest.mark.task("ch07.1")
@pytest.mark.points(3)
def test_the_books_split():
    x = torch.arange(32.0).reshape(1, 4, 8)  # B=1, T=4, E=8; position t holds 8t..8t+7
    got = at.split_heads(x, 2)
    expected_head0 = [[0, 1, 2, 3], [8, 9, 10, 11], [16, 17, 18, 19], [24, 25, 26, 27]]
    ok = tuple(got.shape) == (1, 2, 4, 4) and got[0, 0].tolist() == expected_head0
    assert ok, (
        f"split_heads(arange(32).reshape(1, 4, 8), 2): head 0 should hold dims 0-3 of every "
        f"position {expected_head0}; {describe_split(x, got, 2)}"
    )


@pytest.mark.task("ch07.1")
@pytest.mark.points(3)
@pytest.mark.parametrize(
    "B, T, E, H", [(2, 4, 16, 4), (2, 3, 12, 3), (1, 5, 10, 2)], ids=["T==H==Dh", "T==H", "odd-T"]
)
def test_every_head_holds_its_slice_of_every_position(B, T, E, H):
    x = torch.arange(float(B * T * E)).reshape(B, T, E)
    got = at.split_heads(x, H)
    expected = heads_of(x, H)
    ok = tuple(got.shape) == tuple(expected.shape) and judge.is_equal(got, expected)
    assert ok, (
        f"split_heads(x[{B}, {T}, {E}], {H})[:, h, t] should be x[:, t, h*Dh:(h+1)*Dh] (head h's "
        f"slice of position t); {describe_split(x, got, H)}"
    )


# ---------------------------------------------------------------- ch07.2 merge_heads


@probe
def merged_split(B, T, H, Dh, seed):
    """merge_heads of the correct split of a random x, built here, where it is still the
    non-contiguous view a transpose returns: (x, what merge_heads returned)."""
    x = torch.randn(B, T, H * Dh, generator=torch.Generator().manual_seed(seed))
    heads = x.view(B, T, H, Dh).transpose(1, 2)
    return x, at.merge_heads(heads)


@pytest.mark.task("ch07.2")
@pytest.mark.points(3)
def test_merge_puts_each_head_back_in_its_slice():
    B, H, T, Dh = 2, 3, 3, 3  # H == T: a merge that forgets to move the head axis still runs
    heads = torch.randn(B, H, T, Dh, generator=gen(72))
    got = at.merge_heads(heads)
    expected = torch.cat([heads[:, h] for h in range(H)], dim=-1)  # (B, T, H*Dh)
    assert tuple(got.shape) == (B, T, H * Dh), (
        f"merge_heads of a [2, 3, 3, 3] tensor returned shape {list(got.shape)}, expected [2, 3, 9]"
    )
    same = judge.is_equal(got, expected)
    assert same, (
        f"merge_heads(h)[b, t, i*Dh:(i+1)*Dh] should be h[b, i, t] (head i's output for position "
        f"t): {first_difference(got, expected)}. Move the head axis back next to Dh "
        "(transpose(1, 2)) before the reshape"
    )


@pytest.mark.task("ch07.2")
@pytest.mark.points(2)
def test_merge_undoes_the_correct_split():
    with because(
        "merge_heads failed on the output of a correct split, x.view(B, T, H, Dh).transpose(1, 2), "
        "which is not contiguous: after a transpose the memory is no longer in order, so flatten "
        "with reshape (or .contiguous().view), not view"
    ):
        x, got = merged_split(2, 5, 4, 3, seed=73)
    same = tuple(got.shape) == tuple(x.shape) and judge.is_equal(got, x)
    assert same, (
        f"merge_heads(x.view(B, T, H, Dh).transpose(1, 2)) should give back x exactly: "
        f"{first_difference(got, x)}; a merge that is only the inverse of a wrong split (reshape "
        "both ways) round-trips its own mistake but not this"
    )


# ---------------------------------------------------------------- ch07.3 causal_mask


@probe
def mask_made_on(T, device):
    """causal_mask(T, device=...): the mask (None on the meta device, which holds no
    values), and the device, dtype and shape it was created with."""
    m = at.causal_mask(T, device=device)
    if not isinstance(m, torch.Tensor):
        return None, None, None, None
    return (None if m.is_meta else m), str(m.device), m.dtype, tuple(m.shape)


@pytest.mark.task("ch07.3")
@pytest.mark.points(3)
def test_causal_mask_allows_the_past_and_the_present():
    got = at.causal_mask(4)
    ok = got.dtype == torch.bool and tuple(got.shape) == (4, 4)
    assert ok, f"causal_mask(4) should be a bool [4, 4] tensor, got {brief(got)}"
    expected = [[True, False, False, False], [True, True, False, False]]
    expected += [[True, True, True, False], [True, True, True, True]]
    assert got.tolist() == expected, (
        f"causal_mask(4) returned {got.int().tolist()}: "
        f"{mask_mistake(got, torch.tensor(expected))}, as in F.scaled_dot_product_attention"
    )


@pytest.mark.task("ch07.3")
@pytest.mark.parametrize(
    "device", ["cpu", torch.device("cpu"), "meta"], ids=["str", "torch.device", "meta"]
)
def test_causal_mask_is_made_on_the_requested_device(device):
    got, where, dtype, shape = mask_made_on(3, device)
    call = f"causal_mask(3, device={device!r})"
    assert dtype is not None, f"{call} returned no tensor"
    assert where == str(device), (
        f"{call} returned a mask on {where}: create it directly on the requested device (a "
        "string or a torch.device; 'meta' holds shapes without values, like a GPU you don't "
        "have), not on the CPU and moved later"
    )
    assert dtype == torch.bool and shape == (3, 3), (
        f"{call} is on the right device but is a {dtype} tensor of shape {shape}: expected a "
        "bool [3, 3] mask"
    )
    if got is not None:
        want = torch.ones(3, 3, dtype=torch.bool).tril()
        assert got.tolist() == want.tolist(), (
            f"{call} is a bool [3, 3] mask on the right device, but its values are "
            f"{got.int().tolist()}, expected {want.int().tolist()}: {mask_mistake(got, want)}"
        )


def mask_mistake(got, want) -> str:
    """What a wrong mask of the right shape looks like, from its values alone."""
    if got.tolist() == torch.ones_like(want).tril(1).tolist():
        return "each query also sees the next key — the diagonal offset lets in one future key"
    if got.tolist() == (~want).tolist():
        return "True and False are swapped: True means 'may attend' (keys 0..i for query i)"
    if got.tolist() == want.T.tolist() or got.tolist() == torch.ones_like(want).triu().tolist():
        return "the upper triangle is allowed: row i is query i and may see keys 0..i only"
    if got.tolist() == torch.ones_like(want).tril(-1).tolist():
        return "the diagonal is missing: query i may attend to its own key i"
    return "row i is query i and True means 'may attend': keys 0..i, the diagonal included"


# ---------------------------------------------------------------- ch07.4 / ch07.5 attention

Q, K, V = (torch.randn(2, 3, 5, 8, generator=gen(s)) * 2 for s in (1, 2, 3))  # (B, H, T, D)
CAUSAL = torch.ones(5, 5, dtype=torch.bool).tril()


@pytest.mark.task("ch07.4")
@pytest.mark.points(2)
def test_weights_are_a_distribution_over_allowed_keys():
    w = at.attention_weights(Q, K, CAUSAL)
    assert tuple(w.shape) == (2, 3, 5, 5), (
        f"attention_weights returned shape {list(w.shape)}, expected [2, 3, 5, 5]"
    )
    largest = w.masked_select(~CAUSAL).abs().max().item()
    assert largest == 0, (
        f"attention_weights with a causal mask gave future keys weights up to {largest:.3g}; "
        "masked scores must become -inf *before* the softmax so their weight is exactly 0"
    )
    sums = w.sum(-1)
    ok = judge.is_close(sums, torch.ones_like(sums), atol=1e-5, rtol=1e-5)
    assert ok, (
        f"rows of attention_weights should sum to 1 over the keys, found sums between "
        f"{sums.min():.4f} and {sums.max():.4f}: softmax over the last axis (keys), after masking "
        "— not a mask applied after softmax"
    )


@pytest.mark.task("ch07.4")
@pytest.mark.points(2)
def test_weights_equal_the_scaled_softmax():
    w = at.attention_weights(Q, K)
    expected = torch.softmax(Q @ K.transpose(-2, -1) / 8**0.5, dim=-1)
    close = tuple(w.shape) == tuple(expected.shape) and judge.is_close(
        w, expected, atol=1e-5, rtol=1e-5
    )
    assert close, (
        f"attention_weights(q, k) differs from softmax(q k^T / sqrt(8)): "
        f"{first_difference(w, expected)}. {weights_mistake(w, Q, K)}"
    )


def weights_mistake(w, q, k) -> str:
    """What unmasked weights ``w`` of ``q``, ``k`` equal among the known mistakes, in words."""
    scores = q @ k.transpose(-2, -1)
    D = q.shape[-1]
    known = [
        (torch.softmax(scores, -1), "it equals the softmax of unscaled scores: divide by sqrt(D)"),
        (torch.softmax(scores / D, -1), "it equals scores divided by D: the scale is 1/sqrt(D)"),
        (
            torch.softmax(scores / D**0.5, -2),
            "it equals a softmax over the queries (axis -2): each query's weights run over the "
            "keys, the last axis",
        ),
    ]
    for want, why in known:
        if tuple(w.shape) == tuple(want.shape) and judge.is_close(w, want, atol=1e-5, rtol=1e-5):
            return why
    return "the weights are softmax(q k^T / sqrt(D)) over the keys (the last axis), D = q.shape[-1]"


def huge_disallowed_scores(tq=5, tk=6, d=8, seed=120, big=1e3):
    """q, k where the last two keys score about ``big`` higher than the rest for every
    query, the same k without that, and a mask that disallows exactly those two keys."""
    q = torch.rand(2, 2, tq, d, generator=gen(seed)) + 0.5
    k = torch.randn(2, 2, tk, d, generator=gen(seed + 1))
    k_huge = k.clone()
    k_huge[..., tk - 2 :, :] = big
    mask = torch.ones(tq, tk, dtype=torch.bool)
    mask[:, tk - 2 :] = False
    return q, k, k_huge, mask


@pytest.mark.task("ch07.4")
@pytest.mark.points(3)
def test_a_disallowed_keys_score_never_matters():
    q, k, k_huge, mask = huge_disallowed_scores()
    w, w_huge = at.attention_weights(q, k, mask), at.attention_weights(q, k_huge, mask)
    ok = tuple(w_huge.shape) == (2, 2, 5, 6) and judge.is_close(w, w_huge, atol=1e-6, rtol=1e-5)
    assert ok, (
        f"attention_weights: raising the scores of two disallowed keys to ~1e3 changed the weights "
        f"of the allowed keys ({first_difference(w_huge, w, atol=1e-6)}); a masked key must not "
        "matter at all: replace disallowed scores by -inf before the softmax, and if you write "
        "the softmax by hand take its max shift over the allowed keys only"
    )


@pytest.mark.task("ch07.5")
@pytest.mark.points(2)
@pytest.mark.parametrize("masked", [False, True], ids=["unmasked", "causal"])
def test_attention_equals_pytorch(masked):
    mask = CAUSAL if masked else None
    got = at.attention(Q, K, V, mask)
    ref = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    assert tuple(got.shape) == tuple(ref.shape), (
        f"attention returned {list(got.shape)}, expected {list(ref.shape)}"
    )
    close = judge.is_close(got, ref, atol=1e-4, rtol=1e-5)
    assert close, (
        f"attention(q, k, v, mask={'causal' if masked else None}) differs from "
        f"F.scaled_dot_product_attention: {first_difference(got, ref, atol=1e-4)}. "
        + built_on(
            "attention",
            ("ch07.4",),
            "Scores q k^T scaled by 1/sqrt(D), masked to -inf where the mask is False, softmax "
            "over keys, then times v",
        )
    )


@pytest.mark.task("ch07.5")
@pytest.mark.points(2)
def test_cross_attention_with_other_value_size_equals_pytorch():
    q = torch.randn(2, 2, 3, 6, generator=gen(4)) * 2  # Tq=3, D=6
    k = torch.randn(2, 2, 7, 6, generator=gen(5)) * 2  # Tk=7
    v = torch.randn(2, 2, 7, 4, generator=gen(6))  # Dv=4
    mask = torch.rand(3, 7, generator=gen(7)) < 0.6
    mask[:, 0] = True  # every query keeps at least one key
    got = at.attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ok = tuple(got.shape) == (2, 2, 3, 4) and judge.is_close(got, ref, atol=1e-4, rtol=1e-5)
    assert ok, (
        f"cross-attention (3 queries, 7 keys, D=6, Dv=4, a random mask) differs from "
        f"F.scaled_dot_product_attention: {first_difference(got, ref, atol=1e-4)}. "
        + built_on(
            "attention",
            ("ch07.4",),
            "The result is [..., Tq, Dv]: one row of weights per query over the Tk keys, scaled "
            "by 1/sqrt(D) of q and k",
        )
    )


# ---------------------------------------------------------------- ch07.6 MultiHeadSelfAttention

PARAM_NAMES = ("qkv.weight", "qkv.bias", "proj.weight", "proj.bias")


def make_params(E: int, seed: int, scale: float = 1.0) -> dict:
    """Projection weights for an E-dimensional model, as plain tensors."""
    g = gen(seed)
    return {
        "qkv.weight": torch.randn(3 * E, E, generator=g) * scale / math.sqrt(E),
        "qkv.bias": torch.randn(3 * E, generator=g) * 0.1,
        "proj.weight": torch.randn(E, E, generator=g) / math.sqrt(E),
        "proj.bias": torch.randn(E, generator=g) * 0.1,
    }


def build(E, H, causal, params):
    """The student's module (inside a probe), holding ``params`` if given."""
    model = (
        at.MultiHeadSelfAttention(E, H)
        if causal is None
        else at.MultiHeadSelfAttention(E, H, causal)
    )
    if params is not None:
        with torch.no_grad():
            for name in PARAM_NAMES:
                model.get_parameter(name).copy_(params[name])
    return model


@probe
def mhsa_forwards(E, H, causal, xs, params=None):
    """One MultiHeadSelfAttention(E, H[, causal]) holding ``params``, run on each x of
    ``xs`` in turn: its outputs, last_weights after each call, and its parameters."""
    model = build(E, H, causal, params)
    outs, weights = [], []
    with torch.no_grad():
        for x in xs:
            outs.append(model(x))
            weights.append(model.last_weights)
    held = {name: p.detach().clone() for name, p in model.named_parameters()}
    return {"outs": outs, "weights": weights, "params": held}


@probe
def mhsa_gradients(E, H, causal, x, params, out_grad):
    """Gradients through the student's module: per output position t, d out[:, t].sum() / dx
    (stacked, [T, B, T, E]); and for the loss (out * out_grad).sum(), the gradients of x
    and of every parameter (None where none arrived)."""
    model = build(E, H, causal, params)
    x = x.clone().requires_grad_(True)
    out = model(x)
    rows = [
        torch.autograd.grad(out[:, t].sum(), x, retain_graph=True, allow_unused=True)[0]
        for t in range(x.shape[1])
    ]
    rows = [torch.zeros_like(x) if r is None else r for r in rows]
    (out * out_grad).sum().backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    return {"rows": torch.stack(rows), "x": x.grad, "params": grads}


def torch_reference(params, E, H):
    """nn.MultiheadAttention holding ``params`` (qkv -> in_proj, proj -> out_proj)."""
    ref = nn.MultiheadAttention(E, H, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(params["qkv.weight"])
        ref.in_proj_bias.copy_(params["qkv.bias"])
        ref.out_proj.weight.copy_(params["proj.weight"])
        ref.out_proj.bias.copy_(params["proj.bias"])
    return ref


def reference_forward(params, x, H, causal):
    """nn.MultiheadAttention's output and per-head weights [B, H, T, T] for ``x``."""
    B, T, E = x.shape
    blocked = ~torch.ones(T, T, dtype=torch.bool).tril() if causal else None  # True = blocked
    with torch.no_grad():
        out, w = torch_reference(params, E, H)(
            x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False
        )
    return out, w


def variant_forward(params, x, H, causal, scale=None, split="view", merge="transpose"):
    """The same function written with F.scaled_dot_product_attention, with one part
    swapped for a known mistake: the trusted side's way of naming what a wrong output did."""
    B, T, E = x.shape
    q, k, v = F.linear(x, params["qkv.weight"], params["qkv.bias"]).chunk(3, dim=-1)
    if split == "view":
        q, k, v = (t.view(B, T, H, E // H).transpose(1, 2) for t in (q, k, v))
    else:
        q, k, v = (t.reshape(B, H, T, E // H) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    y = y.transpose(1, 2).reshape(B, T, E) if merge == "transpose" else y.reshape(B, T, E)
    return F.linear(y, params["proj.weight"], params["proj.bias"])


def wrong_parts(tasks=("ch07.1", "ch07.2", "ch07.3", "ch07.4")) -> list[str]:
    """Which of these tasks' functions (split_heads, merge_heads, causal_mask,
    attention_weights) give a wrong answer on a small case of their own: while one of them is
    wrong, a wrong output of what is built from them says nothing about the builder."""

    def right(call, want) -> bool:
        try:
            got = call()
        except Exception:  # noqa: BLE001 - a part that raises is a wrong part
            return False
        if want.dtype == torch.bool:
            return judge.is_equal(got, want)
        return judge.is_close(got, want, atol=1e-5, rtol=1e-5)

    x = torch.randn(2, 3, 6, generator=gen(90))
    heads = x.view(2, 3, 3, 2).transpose(1, 2)
    q, k = (torch.randn(2, 3, 4, 2, generator=gen(s)) for s in (91, 92))
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    scores = (q @ k.transpose(-2, -1) / math.sqrt(2)).masked_fill(~mask, float("-inf"))
    checks = [
        ("ch07.1 split_heads", lambda: at.split_heads(x, 3), heads),
        ("ch07.2 merge_heads", lambda: at.merge_heads(heads.contiguous()), x),
        ("ch07.3 causal_mask", lambda: at.causal_mask(4), mask),
        ("ch07.4 attention_weights", lambda: at.attention_weights(q, k, mask), scores.softmax(-1)),
    ]
    return [name for name, call, want in checks if name[:6] in tasks and not right(call, want)]


def built_on(what: str, tasks: tuple[str, ...], default: str) -> str:
    """``default`` (what the observation of ``what`` points at), unless a function of
    ``tasks`` that it is built from is wrong: then that one, since ``what`` cannot be judged
    before it is right."""
    parts = wrong_parts(tasks)
    if not parts:
        return default
    return (
        f"{what} is built from {', '.join(parts)}, which gives a wrong answer on a small case of "
        "its own (its tests say how): fix that first — this output follows from it"
    )


def mhsa_problem(default: str) -> str:
    """``default``, unless a function MultiHeadSelfAttention is built from is wrong."""
    return built_on("MultiHeadSelfAttention", ("ch07.1", "ch07.2", "ch07.3", "ch07.4"), default)


def diagnose_mhsa(got, params, x, H, causal) -> str:
    """Which single known change of the module's function ``got`` equals, in a sentence."""
    E = x.shape[-1]

    def near(**change):
        y = variant_forward(params, x, H, **{"causal": causal, **change})
        return tuple(got.shape) == tuple(y.shape) and judge.is_close(got, y, atol=1e-4, rtol=1e-5)

    if near(causal=not causal):
        return f"it equals the output with causal={not causal}: " + (
            "causal=False must apply no mask at all (every position attends to every other)"
            if not causal
            else "causal=True must mask the future (query i attends keys 0..i only)"
        )
    if H > 1 and near(scale=1 / math.sqrt(E)):
        return (
            f"it equals attention scaled by 1/sqrt(E) = 1/sqrt({E}): each head's scores are "
            f"scaled by 1/sqrt(Dh) with the per-head dimension Dh = E / H = {E // H}"
        )
    if near(scale=1.0):
        return "it equals attention without the 1/sqrt(Dh) scale: divide each head's scores by sqrt(Dh)"
    if H > 1 and near(split="reshape", merge="reshape"):
        return (
            "it equals heads split and merged with plain reshapes: a reshape regroups memory, so "
            "each 'head' holds whole positions; split with view(B, T, H, Dh).transpose(1, 2)"
        )
    if H > 1 and near(merge="reshape"):
        return (
            "it equals a merge by plain reshape: move the head axis back next to Dh "
            "(transpose(1, 2)) before flattening [B, H, T, Dh] into [B, T, E]"
        )
    return (
        "check the order q, k, v from qkv's output, the head split (view + transpose, not "
        "reshape), the 1/sqrt(Dh) scale per head, the mask (built for T = x.shape[1], True = "
        "allowed) and the merge"
    )


@pytest.mark.task("ch07.6")
@pytest.mark.points(3)
def test_no_future_position_changes_an_earlier_output():
    x = torch.randn(2, 6, 16, generator=gen(74))
    x2 = x.clone()
    x2[:, 3:] = torch.randn(2, 3, 16, generator=gen(75)) * 5  # change positions 3, 4, 5 only
    with because("MultiHeadSelfAttention(16, 4, causal=True) on x[2, 6, 16] raised"):
        y, y2 = mhsa_forwards(16, 4, True, [x, x2], make_params(16, 7))["outs"]
    for out in (y, y2):  # an empty or NaN output is "unchanged" vacuously
        judge.answer(out, (2, 6, 16), "MultiHeadSelfAttention(16, 4, causal=True) on x[2, 6, 16]")
    changed = (y[:, :3] != y2[:, :3]).any(-1).any(0).nonzero().flatten().tolist()
    assert not changed, (
        f"MultiHeadSelfAttention(16, 4, causal=True): changing inputs at positions 3-5 changed the "
        f"outputs at positions {changed}; an output may depend only on its own and earlier "
        "positions — "
        + mhsa_problem(
            "mask the scores with the causal mask before the softmax (and keep heads split per "
            "position)"
        )
    )


@pytest.mark.task("ch07.6")
@pytest.mark.points(3)
def test_no_gradient_flows_from_the_future():
    x = torch.randn(2, 5, 12, generator=gen(76))
    with because(
        "backward through MultiHeadSelfAttention(12, 3, causal=True) on x[2, 5, 12] raised"
    ):
        rows = mhsa_gradients(12, 3, True, x, make_params(12, 8), torch.ones(2, 5, 12))["rows"]
    for t in range(4):
        leak = rows[t][:, t + 1 :].abs().max().item()
        assert leak == 0, (
            f"MultiHeadSelfAttention(12, 3): the output at position {t} has a nonzero gradient "
            f"(up to {leak:.3g}) with respect to a later input: "
            + mhsa_problem(
                "in a causal model no path may lead from a future position to an earlier output "
                "— not through the softmax's normaliser, not through a head split that mixes "
                "positions"
            )
        )


@pytest.mark.task("ch07.6")
@pytest.mark.points(3)
def test_weights_of_a_causal_model_are_observable_and_exact():
    x = torch.randn(2, 5, 12, generator=gen(76))
    with because("MultiHeadSelfAttention(12, 3, causal=True) on x[2, 5, 12] raised"):
        (w,) = mhsa_forwards(12, 3, True, [x], make_params(12, 8))["weights"]
    ok = isinstance(w, torch.Tensor) and tuple(w.shape) == (2, 3, 5, 5)
    assert ok, (
        f"after a forward on [2, 5, 12], MultiHeadSelfAttention(12, 3).last_weights should be "
        f"[B, H, T, T] = [2, 3, 5, 5], got {brief(w)}"
    )
    future = torch.ones(5, 5, dtype=torch.bool).triu(1)
    largest = w[..., future].abs().max().item()
    assert largest == 0, (
        f"last_weights gives future keys weights up to {largest:.3g}: "
        + mhsa_problem(
            "masked weights must be exactly 0 (mask the scores with -inf before the softmax)"
        )
    )
    sums = w.sum(-1)
    ok = judge.is_close(sums, torch.ones_like(sums), atol=1e-5, rtol=1e-5)
    assert ok, (
        f"each row of last_weights should sum to 1, found {sums.min():.4f}..{sums.max():.4f}: "
        + mhsa_problem("the weights are the softmax over the keys, taken after masking")
    )


@pytest.mark.task("ch07.6")
@pytest.mark.points(3)
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_equals_nn_multiheadattention_with_the_same_weights(causal):
    x = torch.randn(3, 4, 16, generator=gen(77))  # T == H == Dh: a scrambled split still runs
    params = make_params(16, 9, scale=2.0)
    with because(
        f"MultiHeadSelfAttention(16, 4, causal={causal}), its qkv (nn.Linear(E, 3E)) and proj "
        "(nn.Linear(E, E)) loaded with test weights, raised on x[3, 4, 16]"
    ):
        (got,) = mhsa_forwards(16, 4, causal, [x], params)["outs"]
    expected, _ = reference_forward(params, x, 4, causal)
    close = tuple(got.shape) == tuple(expected.shape) and judge.is_close(
        got, expected, atol=1e-4, rtol=1e-5
    )
    assert close, (
        f"MultiHeadSelfAttention(16, 4, causal={causal}) differs from nn.MultiheadAttention with "
        f"the same weights ({first_difference(got, expected, atol=1e-4)}); "
        + mhsa_problem(diagnose_mhsa(got, params, x, 4, causal))
    )
