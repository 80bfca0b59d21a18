"""Hidden tests for ch07: other shapes (T == H, T == Dh, Dh == 1, one head, cross-attention,
Dv != D, no or many leading axes), random and broadcast masks, large scores, float64,
gradients, PyTorch's attention as the oracle, and causality checked by perturbation and
by gradients. Messages state the property, not the test."""

import pytest
import torch
import torch.nn.functional as F

from exercises.ch07.test_attention import (  # helpers and probes shared with the public twin
    PARAM_NAMES,
    build,
    describe_split,
    diagnose_mhsa,
    heads_of,
    huge_disallowed_scores,
    make_params,
    mask_made_on,
    merged_split,
    mhsa_forwards,
    mhsa_gradients,
    mhsa_problem,
    reference_forward,
    torch_reference,
)
from harness import devices, judge
from harness.layouts import LAYOUTS, laid_out
from harness.probe import because, probe
from harness.target import chapter_module

try:  # the trusted side only: the grader's student process neither has nor needs these
    from harness.evidence import brief, first_difference
    from harness.generated import example, examples, given, st
except ImportError:
    pass

at = chapter_module("ch07", "attention")
PROBES_USE = "PARAM_NAMES build"  # what the probes use besides themselves (harness/strip.py)


@probe
def attention_in_layout(layout, q, k, v, mask):
    """attention(q, k, v, mask) with q, k and v rebuilt, same values, in ``layout``
    (harness.layouts: transposed, strided or offset windows of bigger tensors)."""
    return at.attention(laid_out(q, layout), laid_out(k, layout), laid_out(v, layout), mask)


@pytest.mark.task("ch07.5")
@examples(20)
@given(
    layout=st.sampled_from(LAYOUTS),
    dtype=st.sampled_from(["float32", "float64"]),
    tq=st.integers(1, 5),
    tk=st.integers(1, 5),
    causal=st.booleans(),
    seed=st.integers(0, 999),
)
def test_attention_in_any_layout_and_dtype(layout, dtype, tq, tk, causal, seed):
    """q, k and v given as transposed, strided or offset windows of bigger tensors, in float32 or float64, give F.scaled_dot_product_attention's answer."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (
        torch.randn(2, 3, t, d, generator=g).to(getattr(torch, dtype))
        for t, d in ((tq, 4), (tk, 4), (tk, 5))
    )
    mask = torch.ones(tq, tk, dtype=torch.bool).tril(max(tk - tq, 0)) if causal else None
    with because(
        f"attention raised on {dtype} q, k, v given as {layout} windows: .view needs "
        "contiguous memory (matmul, transpose and reshape work on any layout)"
    ):
        got = attention_in_layout(layout, q, k, v, mask)
    want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
    judge.close(
        got,
        want,
        f"attention of {dtype} q[2, 3, {tq}, 4], k[2, 3, {tk}, 4], v[2, 3, {tk}, 5] given as "
        f"{layout} windows (mask: {'causal' if causal else 'none'}) must equal "
        "F.scaled_dot_product_attention on the same values",
        atol=1e-4,
        rtol=1e-4,
        dtype="float",
    )


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_mask(tq: int, tk: int, seed: int) -> torch.Tensor:
    """A bool [tq, tk] mask, True = allowed, with at least one allowed key per query."""
    m = torch.rand(tq, tk, generator=gen(seed)) < 0.5
    m[torch.arange(tq), torch.randint(0, tk, (tq,), generator=gen(seed + 1))] = True
    return m


def sdpa_weights(q, k, mask=None):
    """The attention weights PyTorch computes: attention with the identity as values."""
    eye = torch.eye(k.shape[-2], dtype=q.dtype).expand(*k.shape[:-1], k.shape[-2])
    return F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)


# ---------------------------------------------------------------- probes


@probe
def attention_gradients(q, k, v, mask, out_grad):
    """attention(q, k, v, mask) on leaf copies, then backward of (out * out_grad).sum():
    the output and the gradients of q, k and v (None where none arrived)."""
    q, k, v = (t.clone().requires_grad_(True) for t in (q, k, v))
    out = at.attention(q, k, v, mask)
    (out * out_grad).sum().backward()
    return {"out": out, "q": q.grad, "k": k.grad, "v": v.grad}


@probe
def weights_gradients(q, k, mask, w_grad):
    """attention_weights(q, k, mask) on leaf copies, then backward of (w * w_grad).sum():
    the weights and the gradients of q and k."""
    q, k = (t.clone().requires_grad_(True) for t in (q, k))
    w = at.attention_weights(q, k, mask)
    (w * w_grad).sum().backward()
    return {"w": w, "q": q.grad, "k": k.grad}


@probe
def inputs_after_call(name, q, k, v, mask):
    """Call at.<name> (attention_weights on q, k, mask; attention on q, k, v, mask) on
    copies of these tensors; return the copies afterwards, and the result."""
    args = [t.clone() for t in (q, k, v, mask)]
    if name == "attention_weights":
        return args, at.attention_weights(args[0], args[1], args[3])
    return args, at.attention(*args)


@probe
def raised_by(name, args):
    """What at.<name>(*args) raised: the exception's type name and whether it is a
    ValueError (None if it returned)."""
    try:
        getattr(at, name)(*args)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - what was raised is the observation
        return {"type": type(exc).__name__, "value_error": isinstance(exc, ValueError)}
    return None


@probe
def mhsa_on_gpu(E, H, causal, x, params):
    """The same module on CUDA and on the CPU: (output on cuda, its device, output on cpu)."""
    model = at.MultiHeadSelfAttention(E, H, causal)
    with torch.no_grad():
        for name in PARAM_NAMES:
            model.get_parameter(name).copy_(params[name])
        cpu = model(x)
        model = model.cuda()
        out = model(x.cuda())
    return out, str(out.device), cpu


# ---------------------------------------------------------------- ch07.1


def empty_note(B, T, also="") -> str:
    """What a raise on a batch or a sequence of size 0 means, for the split/merge messages."""
    if B and T:
        return ""
    return (
        f": {'B' if not B else 'T'} = 0 is a legal input (an empty batch or an empty sequence), "
        f"and splitting or merging heads is a shape operation that works on it{also}: a size "
        "left to -1 cannot be inferred from no elements, so give every size, read from the input"
    )


@pytest.mark.task("ch07.1")
@pytest.mark.points(2)
@examples(40)
@example(B=0, T=3, H=2, Dh=3)
@example(B=2, T=0, H=3, Dh=2)
@given(B=st.integers(0, 3), T=st.integers(0, 6), H=st.integers(1, 5), Dh=st.integers(1, 5))
def test_split_gives_each_head_a_slice_of_every_position(B, T, H, Dh):
    """Head h of split_heads holds features h*Dh..(h+1)*Dh-1 of every position, for any sizes (empty batches and sequences too)."""
    E = H * Dh
    x = torch.arange(float(B * T * E)).reshape(B, T, E)
    with because(f"split_heads(x[{B}, {T}, {E}], {H}) raised{empty_note(B, T)}"):
        got = at.split_heads(x, H)
    expected = heads_of(x, H)
    ok = tuple(got.shape) == tuple(expected.shape) and judge.is_equal(got, expected)
    assert ok, (
        f"split_heads(x[{B}, {T}, {E}], {H}) must give [B, H, T, Dh] with head h holding features "
        f"h*Dh..(h+1)*Dh-1 of every position; {describe_split(x, got, H)}"
    )


@pytest.mark.task("ch07.1")
def test_split_keeps_random_values_and_rejects_indivisible_sizes():
    """split_heads moves random values without changing them (T == H == Dh), and raises
    ValueError when n_heads is not a positive divisor of the embedding size."""
    x = torch.randn(2, 3, 9, generator=gen(79))
    got = at.split_heads(x, 3)
    expected = heads_of(x, 3)
    ok = tuple(got.shape) == (2, 3, 3, 3) and judge.is_equal(got, expected)
    assert ok, (
        f"split_heads(x[2, 3, 9], 3) is not the per-position feature split: "
        f"{first_difference(got, expected) if tuple(got.shape) == (2, 3, 3, 3) else brief(got)}"
    )
    seen = raised_by("split_heads", [torch.zeros(1, 2, 10), 4])
    assert seen is not None and seen["value_error"], (
        f"split_heads(x[1, 2, 10], 4) must raise ValueError (10 features do not split into 4 "
        f"equal heads); it {'returned' if seen is None else 'raised ' + seen['type']}"
    )
    seen = raised_by("split_heads", [torch.zeros(1, 2, 8), 0])
    assert seen is not None and seen["value_error"], (
        f"split_heads(x[1, 2, 8], 0) must raise ValueError (no heads is not a split); it "
        f"{'returned' if seen is None else 'raised ' + seen['type']}"
    )


# ---------------------------------------------------------------- ch07.2


@pytest.mark.task("ch07.2")
@pytest.mark.points(2)
@examples(30)
@example(B=2, H=2, T=0, Dh=4, seed=0)
@example(B=0, H=3, T=2, Dh=2, seed=0)
@given(
    B=st.integers(0, 3),
    H=st.integers(1, 5),
    T=st.integers(0, 6),
    Dh=st.integers(1, 5),
    seed=st.integers(0, 10_000),
)
def test_merge_concatenates_heads_per_position(B, H, T, Dh, seed):
    """merge_heads returns [B, T, H*Dh]: position t holds head 0's output, then head 1's, ... (empty batches and sequences too)."""
    heads = torch.randn(B, H, T, Dh, generator=gen(seed))
    inverse = " (merge_heads inverts split_heads on every shape split_heads accepts)"
    with because(f"merge_heads(x[{B}, {H}, {T}, {Dh}]) raised{empty_note(B, T, inverse)}"):
        got = at.merge_heads(heads)
    expected = torch.cat(heads.unbind(1), dim=-1)
    ok = tuple(got.shape) == (B, T, H * Dh) and judge.is_equal(got, expected)
    assert ok, (
        f"merge_heads(x[{B}, {H}, {T}, {Dh}]) must return [B, T, H*Dh] with head i's output for "
        f"position t at [b, t, i*Dh:(i+1)*Dh] ("
        f"{first_difference(got, expected) if tuple(got.shape) == (B, T, H * Dh) else brief(got)}"
        "): move the head axis next to Dh (transpose(1, 2)) before flattening them together"
    )


@pytest.mark.task("ch07.2")
@pytest.mark.parametrize("B, T, H, Dh", [(2, 6, 3, 4), (1, 4, 4, 1), (3, 1, 2, 5)], ids=str)
def test_merge_accepts_the_non_contiguous_output_of_a_split(B, T, H, Dh):
    """merge_heads exactly undoes the correct split, given as the non-contiguous view it is."""
    with because(
        "merge_heads failed on a non-contiguous [B, H, T, Dh] tensor: after transpose the memory "
        "is no longer in order, so use reshape or .contiguous().view"
    ):
        x, got = merged_split(B, T, H, Dh, seed=80 + T)
    same = tuple(got.shape) == tuple(x.shape) and judge.is_equal(got, x)
    assert same, f"merge_heads must exactly undo the correct head split: {first_difference(got, x)}"


# ---------------------------------------------------------------- ch07.3


@pytest.mark.task("ch07.3")
@pytest.mark.parametrize("T", [1, 2, 7, 16])
def test_causal_mask_is_lower_triangular_bool(T):
    """causal_mask(T) is bool [T, T], True exactly where key j <= query i."""
    got = at.causal_mask(T)
    expected = torch.ones(T, T, dtype=torch.bool).tril()
    ok = got.dtype == torch.bool and tuple(got.shape) == (T, T) and judge.is_equal(got, expected)
    assert ok, (
        f"the causal mask for T={T} must be bool [T, T] with True exactly where key j <= query i "
        f"(diagonal allowed, later keys not), following F.scaled_dot_product_attention's "
        f"convention that True means allowed; got {brief(got)}"
    )


@pytest.mark.task("ch07.3")
def test_causal_mask_gives_pytorchs_causal_attention():
    """Used as attn_mask, causal_mask(T) gives F.scaled_dot_product_attention's is_causal result."""
    q, k, v = (torch.randn(2, 2, 6, 4, generator=gen(s)) for s in (81, 82, 83))
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=at.causal_mask(6))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    close = judge.is_close(got, ref, atol=1e-5, rtol=1e-5)
    assert close, (
        "used as attn_mask of F.scaled_dot_product_attention, the causal mask must give the same "
        "result as is_causal=True: True means 'may attend', and query i may attend keys 0..i"
    )


@probe
def mask_under_default_device(T, default):
    """causal_mask(T) with no device, inside `with torch.device(default)` (outside any when
    ``default`` is None): the device it was created on, its dtype and shape, and where
    torch.empty(0) lands in the same place."""
    if default is None:
        m, empty = at.causal_mask(T), torch.empty(0)
    else:
        with torch.device(default):
            m, empty = at.causal_mask(T), torch.empty(0)
    if not isinstance(m, torch.Tensor):
        return None, None, None, str(empty.device), None
    values = None if m.is_meta else m.cpu()
    return str(m.device), m.dtype, tuple(m.shape), str(empty.device), values


@pytest.mark.task("ch07.3")
def test_causal_mask_without_a_device_lands_on_the_default_device():
    """causal_mask(T) with no device is created where torch creates tensors by default: the CPU
    unless the caller set another default device (`with torch.device(...)`)."""
    for default in (None, "meta"):
        where, dtype, shape, empty, values = mask_under_default_device(3, default)
        setting = "" if default is None else f"inside `with torch.device({default!r})`, "
        causal = torch.ones(3, 3, dtype=torch.bool).tril()
        right = values is None or (values.dtype == torch.bool and judge.is_equal(values, causal))
        assert where == empty and dtype == torch.bool and shape == (3, 3) and right, (
            f"{setting}causal_mask(3) without a device returned a {dtype} tensor of shape "
            f"{shape} on {where} (values {values}), while torch.empty(0) there lands on {empty}: "
            "expected the bool [3, 3] causal mask on torch's current default device. device=None means that default, "
            "so pass device on to the factory function (torch.ones(..., device=device)) "
            "instead of choosing a device yourself (cuda when available, or the CPU)"
        )


@pytest.mark.task("ch07.3")
@pytest.mark.cuda
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_causal_mask_is_created_on_the_gpu(device):
    """causal_mask(T, device='cuda') is a bool [T, T] tensor on the GPU."""
    got, where, dtype, _ = mask_made_on(5, device)
    expected = torch.ones(5, 5, dtype=torch.bool).tril()
    ok = str(where).startswith("cuda") and dtype == torch.bool and got is not None
    assert ok and judge.is_equal(got, expected), (
        f"causal_mask(5, device={device!r}) returned {brief(got)} on {where}: the mask must be "
        "created as a bool [T, T] tensor directly on the requested device"
    )


# ---------------------------------------------------------------- ch07.4 / ch07.5 inputs

LEADING = st.sampled_from([(), (2,), (3,), (2, 3), (1, 2)])
MASKS = st.sampled_from(["none", "full", "keys", "per-example", "all-true"])
SCALES = st.sampled_from(
    [1.0, 3.0, "ternary"]
)  # make_case's q and k: normal times 1 or 3, or {-1, 0, 1}


def make_case(lead, tq, tk, d, dv, mask_kind, scale, dtype, seed):
    """q [*lead, tq, d], k [*lead, tk, d], v [*lead, tk, dv] and a mask of the chosen kind
    (every query keeps at least one allowed key); q and k are normal times ``scale``, or
    with ``scale="ternary"`` drawn from {-1, 0, 1}."""
    g = gen(seed)
    if scale == "ternary":  # entries in {-1, 0, 1}: zero rows, and scores exactly 0 and tied
        q = torch.randint(-1, 2, (*lead, tq, d), generator=g).to(dtype)
        k = torch.randint(-1, 2, (*lead, tk, d), generator=g).to(dtype)
    else:
        q = (torch.randn(*lead, tq, d, generator=g) * scale).to(dtype)
        k = (torch.randn(*lead, tk, d, generator=g) * scale).to(dtype)
    v = torch.randn(*lead, tk, dv, generator=g).to(dtype)
    if mask_kind == "none":
        mask = None
    elif mask_kind == "full":
        mask = random_mask(tq, tk, seed)  # [Tq, Tk]
    elif mask_kind == "keys":
        mask = torch.rand(tk, generator=g) < 0.6  # [Tk]: a key-padding mask
        mask[0] = True
    elif mask_kind == "per-example":
        lead1 = lead[:1] + (1,) * (len(lead) - 1)
        mask = torch.rand(*lead1, tq, tk, generator=g) < 0.5
        mask[..., 0] = True
    else:
        mask = torch.ones(tq, tk, dtype=torch.bool)
    return q, k, v, mask


def case_text(q, k, v, mask):
    m = "None" if mask is None else f"bool{list(mask.shape)}"
    return f"q{list(q.shape)}, k{list(k.shape)}, v{list(v.shape)} {str(q.dtype)[6:]}, mask={m}"


def empty_text(q):
    """What a call with no queries (Tq == 0) is told when it raised."""
    if q.shape[-2]:
        return ""
    return (
        ": Tq == 0 (no queries, as an empty target sequence gives) is legal, and the result "
        "then holds no rows; flattening the leading axes with reshape(-1, Tq, D) (for bmm) "
        "cannot infer the -1 from zero elements: keep the leading axes and let @ broadcast "
        "over them, or spell every size out"
    )


def full_mask(mask, q, k):
    """The mask broadcast to [..., Tq, Tk] (PyTorch's kernels want at least two axes)."""
    if mask is None:
        return None
    return mask.expand(
        *torch.broadcast_shapes(q.shape[:-2], mask.shape[:-2]), q.shape[-2], k.shape[-2]
    )


def allowed(mask, shape):
    return torch.ones(shape, dtype=torch.bool) if mask is None else mask.expand(shape)


def tolerance(dtype):
    return (1e-10, 1e-8) if dtype == torch.float64 else (1e-4, 1e-4)


# Scores far from zero, with the answer known exactly: q_i = m a_i u and k_j = sign m r_j u
# with |u|^2 = sqrt(D), so score_ij = sign m^2 a_i r_j, a_i and r_j in [1, 2] and the r_j at
# least 1/Tk apart. Every query puts all its weight on one allowed key (the largest r_j for
# sign +1, the smallest for -1): the next one is at least m^2 / Tk lower, exp of which is 0.
# With sign -1 every allowed score lies below -m^2, so a finite fill (-1e4, -1e9) for the
# disallowed keys outranks them; with sign +1 an unshifted exp overflows.
FAR_MAGNITUDES = (1e2, 1e3, 1e5)


def far_text(case: str, sign: int, m: float) -> str:
    """A far-scores case as its messages name it: the inputs and the allowed scores' range."""
    s = "-" if sign < 0 else "+"
    return f"{case}, allowed scores {s}{m * m:.0e}..{s}{4 * m * m:.0e}"


def far_scores(lead, tq, tk, d, dv, sign, m, dtype, seed):
    """q, k, v, a mask (every query keeps an allowed key) and, per query, the allowed key
    that takes all the weight."""
    g = gen(seed)
    u = torch.randn(d, generator=g, dtype=torch.float64)
    u = u / u.norm() * d**0.25  # |u|^2 = sqrt(D): the scale 1/sqrt(D) cancels
    a = 1 + torch.rand(*lead, tq, 1, generator=g, dtype=torch.float64)
    r = 1 + torch.randperm(tk, generator=g).double() / tk  # distinct, 1/tk apart
    q = (m * a * u).to(dtype)
    k = (sign * m * r.view(-1, 1) * u).expand(*lead, tk, d).to(dtype).contiguous()
    v = torch.randn(*lead, tk, dv, generator=g).to(dtype)
    mask = random_mask(tq, tk, seed)
    rank = torch.where(mask, sign * r, -float("inf"))  # (Tq, Tk): allowed keys by score
    return q, k, v, mask, rank.argmax(dim=-1)  # (Tq,)


FAR_CASE = dict(
    lead=st.sampled_from([(), (2,), (1, 3)]),
    tq=st.integers(1, 5),
    tk=st.integers(2, 7),
    d=st.integers(1, 8),
    sign=st.sampled_from([-1.0, 1.0]),
    m=st.sampled_from(FAR_MAGNITUDES),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 10_000),
)
FAR_EXAMPLE = dict(lead=(), tq=2, tk=2, d=1, sign=-1.0, m=1e2, dtype=torch.float32, seed=3)


# ---------------------------------------------------------------- ch07.4


@pytest.mark.task("ch07.4")
@examples(40)
@example(lead=(2,), tq=4, tk=5, d=3, mask_kind="full", scale="ternary", dtype=torch.float32, seed=1)
@given(
    lead=LEADING,
    tq=st.integers(0, 6),  # Tq == 0: no queries, a legal [..., 0, D]
    tk=st.integers(1, 7),
    d=st.integers(1, 9),
    mask_kind=MASKS,
    scale=SCALES,
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 10_000),
)
def test_weights_equal_pytorchs_on_generated_inputs(lead, tq, tk, d, mask_kind, scale, dtype, seed):
    """attention_weights equals PyTorch's attention weights for any leading axes, sizes (no queries included), masks and dtype."""
    q, k, _, mask = make_case(lead, tq, tk, d, 1, mask_kind, scale, dtype, seed)
    what = case_text(q, k, _, mask)
    with because(f"attention_weights({what}) raised{empty_text(q)}"):
        w = at.attention_weights(q, k, mask)
    want = sdpa_weights(q, k, full_mask(mask, q, k))
    assert tuple(w.shape) == tuple(want.shape) and w.dtype == dtype, (
        f"attention_weights({what}) returned {brief(w)}: expected [..., Tq, Tk] = "
        f"{list(want.shape)} in the inputs' dtype"
    )
    ok_mask = allowed(mask, want.shape)
    largest = w[~ok_mask].abs().max().item() if bool((~ok_mask).any()) else 0.0
    assert largest == 0, (
        f"attention_weights({what}) gives disallowed keys weights up to {largest:.3g}: "
        "they must be exactly 0 (-inf before the softmax, with the mask broadcast as given)"
    )
    rtol, atol = tolerance(dtype)
    close = judge.is_close(w, want, atol=atol, rtol=rtol)
    assert close, (
        f"attention_weights({what}) differs from PyTorch's weights "
        f"({first_difference(w, want, atol=atol, rtol=rtol)}): softmax over the keys (last axis) "
        "of q k^T / sqrt(D), D = q.shape[-1], with disallowed scores set to -inf first; what "
        "is disallowed comes from the mask alone, never from a score's value (an allowed "
        "score may be exactly 0: a zero query, orthogonal vectors)"
    )


@pytest.mark.task("ch07.4")
def test_weights_for_cross_attention_with_a_random_mask():
    """Cross-attention weights are [..., Tq, Tk], exactly 0 where masked, rows summing to 1."""
    q = torch.randn(2, 2, 3, 16, generator=gen(84)) * 1.5
    k = torch.randn(2, 2, 6, 16, generator=gen(85)) * 1.5
    mask = random_mask(3, 6, 86)
    w = at.attention_weights(q, k, mask)
    assert tuple(w.shape) == (2, 2, 3, 6), (
        f"weights must be [..., Tq, Tk] (one row per query, one column per key), got {brief(w)}"
    )
    largest = w[..., ~mask].abs().max().item()
    assert largest == 0, (
        f"disallowed keys (mask False) must get weight exactly 0, got up to {largest:.3g}"
    )
    sums_ok = judge.is_close(w.sum(-1), torch.ones(2, 2, 3), atol=1e-5, rtol=1e-5)
    assert sums_ok, (
        "each query's weights must sum to 1 over its keys (softmax over the last axis, after masking)"
    )
    ref = sdpa_weights(q, k, mask)
    close = judge.is_close(w, ref, atol=2e-5, rtol=1e-5)
    assert close, (
        f"the weights must equal PyTorch's scaled dot-product attention weights "
        f"({first_difference(w, ref, atol=2e-5)}): softmax of q k^T / sqrt(D) over keys, with "
        "disallowed scores set to -inf before the softmax"
    )


@pytest.mark.task("ch07.4")
def test_weights_scale_with_the_head_dimension():
    """With D = 64 the scores are divided by sqrt(64) = 8, for inputs without a head axis."""
    q = torch.randn(4, 6, 64, generator=gen(87))  # no head axis: [B, T, D]
    k = torch.randn(4, 6, 64, generator=gen(88))
    w = at.attention_weights(q, k)
    ref = sdpa_weights(q, k)
    assert tuple(w.shape) == (4, 6, 6) and judge.is_close(w, ref, atol=2e-5, rtol=1e-5), (
        f"with D = 64 the scores must be divided by sqrt(64) = 8 before the softmax, over the last "
        f"axis, for inputs of any number of leading dimensions ({first_difference(w, ref)})"
    )


@pytest.mark.task("ch07.4")
def test_weights_ignore_the_scores_of_disallowed_keys():
    """A disallowed key's score, however large, does not change the allowed keys' weights."""
    q, k, k_huge, mask = huge_disallowed_scores(tq=3, tk=7, d=5, seed=150, big=3e3)
    w, w_huge = at.attention_weights(q, k, mask), at.attention_weights(q, k_huge, mask)
    ok = tuple(w_huge.shape) == (2, 2, 3, 7) and judge.is_close(w, w_huge, atol=1e-6, rtol=1e-5)
    assert ok, (
        "a disallowed key's score, however large, must not change the weights of the allowed keys "
        "(nor make them nan): replace disallowed scores by -inf before the softmax, and take any "
        "max shift or normaliser over the allowed keys only"
    )


@pytest.mark.task("ch07.4")
@examples(10)
@example(**FAR_EXAMPLE)
@given(**FAR_CASE)
def test_disallowed_keys_get_no_weight_whatever_the_allowed_scores(
    lead, tq, tk, d, sign, m, dtype, seed
):
    """Disallowed weights are exactly 0 also when every allowed score is far below -1e4, or far above 0."""
    q, k, _, mask, best = far_scores(lead, tq, tk, d, 1, sign, m, dtype, seed)
    what = far_text(case_text(q, k, _, mask), sign, m)
    with because(f"attention_weights({what}) raised"):
        w = at.attention_weights(q, k, mask)
    want = F.one_hot(best, tk).to(dtype).expand(*lead, tq, tk)
    assert tuple(w.shape) == tuple(want.shape) and w.dtype == dtype, (
        f"attention_weights({what}) returned {brief(w)}: expected [..., Tq, Tk] = "
        f"{list(want.shape)} in the inputs' dtype"
    )
    blocked = ~mask.expand(want.shape)
    largest = w[blocked].abs().max().item() if bool(blocked.any()) else 0.0
    assert largest == 0, (
        f"attention_weights({what}) gives disallowed keys weights up to {largest:.3g}: they "
        "must be exactly 0 whatever the allowed scores are. A finite fill (-1e4, -1e9) is "
        "not 'minus infinity': where every allowed score lies below it, the disallowed keys "
        "win the softmax. Fill with float('-inf') (or leave the disallowed keys out of the "
        "softmax)"
    )
    assert judge.is_close(w, want, atol=1e-6, rtol=0), (
        f"attention_weights({what}): {first_difference(w, want, atol=1e-6, rtol=0)}; each query "
        "puts all its weight on its highest-scoring allowed key here (the next one scores "
        f"{m * m / tk:.0e} lower), and the row sums to 1 — subtract the row's maximum over the "
        "allowed keys before exp (torch.softmax does), or exp overflows to inf and nan"
    )


@pytest.mark.task("ch07.4")
def test_weights_survive_large_scores():
    """Scores in the hundreds give PyTorch's weights, not inf or nan."""
    q = torch.randn(2, 4, 8, generator=gen(123)) * 12
    k = torch.randn(2, 5, 8, generator=gen(124)) * 12
    mask = random_mask(4, 5, 125)
    w = at.attention_weights(q, k, mask)
    ref = sdpa_weights(q, k, mask)
    assert judge.is_close(w, ref, atol=1e-5, rtol=1e-5), (
        f"with scores of several hundred the weights must still be PyTorch's "
        f"({first_difference(w, ref)}): exp of a large score overflows; a softmax that subtracts "
        "the row's maximum over the allowed keys (as torch.softmax does) does not"
    )


@pytest.mark.task("ch07.4")
@pytest.mark.points(2)
def test_weights_pass_gradients_to_queries_and_keys():
    """Gradients of the weights with respect to q and k are those of PyTorch's softmax."""
    q = torch.randn(2, 3, 4, 6, generator=gen(126), dtype=torch.float64)
    k = torch.randn(2, 3, 5, 6, generator=gen(127), dtype=torch.float64)
    mask = random_mask(4, 5, 128)
    w_grad = torch.randn(2, 3, 4, 5, generator=gen(129), dtype=torch.float64)
    with because("backward through attention_weights raised"):
        seen = weights_gradients(q, k, mask, w_grad)
    qr, kr = (t.clone().requires_grad_(True) for t in (q, k))
    want = sdpa_weights(qr, kr, mask)
    (want * w_grad).sum().backward()
    for name, ref in (("q", qr.grad), ("k", kr.grad)):
        g = seen[name]
        assert g is not None and judge.is_close(g, ref, atol=1e-8, rtol=1e-5), (
            f"the gradient of the weights with respect to {name} differs from PyTorch's "
            f"({'none arrived' if g is None else first_difference(g, ref, atol=1e-8)}): the "
            "weights must be computed from q and k inside the graph (no detach, no .data, no "
            "rebuilt tensors)"
        )


def changed_inputs(name, shape):
    """Which of q, k, v and the mask ``at.<name>`` changed (judged beside a real result of
    ``shape``: leaving the inputs alone earns its point only with an answer)."""
    q, k, v = (torch.randn(2, 4, 5, generator=gen(s)) for s in (130, 131, 132))
    mask = random_mask(4, 4, 133)
    after, result = inputs_after_call(name, q, k, v, mask)
    judge.answer(result, shape, f"{name}(q[2, 4, 5], k[2, 4, 5], ...)")
    return [
        n
        for n, a, b in zip("q k v mask".split(), after, (q, k, v, mask))
        if not judge.is_equal(a, b)
    ]


@pytest.mark.task("ch07.4")
def test_the_inputs_are_left_unchanged():
    """attention_weights leaves q, k and the mask as they were."""
    changed = changed_inputs("attention_weights", (2, 4, 4))
    assert not changed, (
        f"calling attention_weights changed its inputs {changed}: compute the scaled scores as "
        "a new tensor (no in-place division, masked_fill_ or transpose_ on the caller's tensors)"
    )


@pytest.mark.task("ch07.5")
def test_attention_leaves_its_inputs_unchanged():
    """attention leaves q, k, v and the mask as they were."""
    changed = changed_inputs("attention", (2, 4, 5))
    assert not changed, (
        f"calling attention changed its inputs {changed}: compute the scores and the output as "
        "new tensors (no in-place division, masked_fill_ or transpose_ on the caller's tensors)"
    )


# ---------------------------------------------------------------- ch07.5


@pytest.mark.task("ch07.5")
@examples(40)
@given(
    lead=LEADING,
    tq=st.integers(0, 6),  # Tq == 0: no queries, a legal [..., 0, D]
    tk=st.integers(1, 7),
    d=st.integers(1, 9),
    dv=st.integers(1, 6),
    mask_kind=MASKS,
    scale=SCALES,
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 10_000),
)
def test_attention_equals_pytorch_on_generated_inputs(
    lead, tq, tk, d, dv, mask_kind, scale, dtype, seed
):
    """attention equals F.scaled_dot_product_attention for any leading axes, sizes (no queries included), Dv, masks and dtype."""
    q, k, v, mask = make_case(lead, tq, tk, d, dv, mask_kind, scale, dtype, seed)
    what = case_text(q, k, v, mask)
    with because(f"attention({what}) raised{empty_text(q)}"):
        got = at.attention(q, k, v, mask)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=full_mask(mask, q, k))
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == dtype, (
        f"attention({what}) returned {brief(got)}: expected [..., Tq, Dv] = {list(want.shape)} "
        "in the inputs' dtype"
    )
    rtol, atol = tolerance(dtype)
    close = judge.is_close(got, want, atol=atol, rtol=rtol)
    assert close, (
        f"attention({what}) differs from F.scaled_dot_product_attention "
        f"({first_difference(got, want, atol=atol, rtol=rtol)}): scale by 1/sqrt(D) with D = "
        "q.shape[-1] (not Dv, not a sequence length), mask before a softmax over keys, then "
        "weight the values"
    )


@pytest.mark.task("ch07.5")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "shape_q, shape_k, dv, masked",
    [
        ((3, 7, 8), (3, 7, 8), 5, False),
        ((2, 4, 3, 32), (2, 4, 9, 32), 16, True),
        ((1, 2, 6, 6), (1, 2, 6, 6), 6, True),
    ],
    ids=["3d-Dv!=D", "cross-masked", "square-masked"],
)
def test_attention_equals_pytorch_on_other_shapes(shape_q, shape_k, dv, masked):
    """attention equals F.scaled_dot_product_attention on self- and cross-attention shapes."""
    q = torch.randn(*shape_q, generator=gen(90)) * 2
    k = torch.randn(*shape_k, generator=gen(91)) * 2
    v = torch.randn(*shape_k[:-1], dv, generator=gen(92))
    mask = random_mask(shape_q[-2], shape_k[-2], 93) if masked else None
    got = at.attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert tuple(got.shape) == tuple(ref.shape), (
        f"attention must return [..., Tq, Dv] = {list(ref.shape)}, got {brief(got)}"
    )
    close = judge.is_close(got, ref, atol=1e-4, rtol=1e-5)
    assert close, (
        f"attention must equal F.scaled_dot_product_attention with the same boolean mask (True = "
        f"allowed) ({first_difference(got, ref, atol=1e-4)}): scale by 1/sqrt(D), mask before a "
        "softmax over keys, then weight the values"
    )


# Key-padding masks over a long key axis (past block sizes of 256, 512 and 1024): each
# example's allowed keys lie in one stretch, with hundreds of disallowed keys before or after.
PAD_TK = 1030
PAD_KEPT = {  # example -> (first allowed key, end), and how its messages name it
    0: (PAD_TK - 4, PAD_TK, "left padding: only its last 4 keys allowed"),
    1: (0, 4, "right padding: only its first 4 keys allowed"),
    2: (515, 521, "keys 515..520 allowed, hundreds disallowed on either side"),
    3: (0, PAD_TK, "every key allowed"),
}


@pytest.mark.task("ch07.5")
def test_attention_broadcasts_a_per_example_mask():
    """A [B, 1, Tq, Tk] mask broadcasts over the heads as in F.scaled_dot_product_attention, a key-padding mask [B, 1, 1, Tk] over 1030 keys (left, right or both sides padded) included."""
    q, k, v = (torch.randn(3, 2, 5, 8, generator=gen(s)) for s in (94, 95, 96))
    mask = torch.stack([random_mask(5, 5, 97 + i) for i in range(3)])[:, None]  # (B, 1, T, T)
    got = at.attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    close = tuple(got.shape) == tuple(ref.shape) and judge.is_close(got, ref, atol=1e-4, rtol=1e-5)
    assert close, (
        f"a mask of shape [B, 1, Tq, Tk] must broadcast over the heads exactly as in "
        f"F.scaled_dot_product_attention ({first_difference(got, ref, atol=1e-4)})"
    )
    g = gen(98)
    B = len(PAD_KEPT)
    q = torch.randn(B, 2, 3, 8, generator=g) * 2
    k = torch.randn(B, 2, PAD_TK, 8, generator=g) * 2
    v = torch.randn(B, 2, PAD_TK, 5, generator=g)
    pad = torch.zeros(B, 1, 1, PAD_TK, dtype=torch.bool)  # True = allowed
    for b, (lo, hi, _) in PAD_KEPT.items():
        pad[b, ..., lo:hi] = True
    what = f"attention(q[{B}, 2, 3, 8], k[{B}, 2, {PAD_TK}, 8], v, key-padding mask bool[{B}, 1, 1, {PAD_TK}])"
    with because(f"{what} raised"):
        got = at.attention(q, k, v, pad)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=pad)
    assert tuple(got.shape) == tuple(ref.shape), (
        f"{what} returned {brief(got)}: expected [..., Tq, Dv] = {list(ref.shape)}"
    )
    for b, (_, _, kept) in PAD_KEPT.items():
        ok = judge.is_close(got[b], ref[b], atol=1e-4, rtol=1e-4)
        why = (
            "it holds nan, though every row has allowed keys: they may all lie after (or before) "
            "a long run of disallowed ones. Where the keys are walked in blocks with a running "
            "maximum, a block holding no allowed key has maximum -inf, and -inf minus -inf is "
            "nan: such a block must contribute nothing, wherever it sits"
            if bool(got[b].isnan().any())
            else "every allowed key takes part in the softmax and every disallowed key gets "
            "weight 0, however long the key axis and wherever the allowed stretch lies"
        )
        assert ok, (
            f"{what}: example {b} ({kept}) differs from F.scaled_dot_product_attention "
            f"({first_difference(got[b], ref[b], atol=1e-4)}): {why}"
        )


@pytest.mark.task("ch07.5")
def test_attention_ignores_the_scores_of_disallowed_keys():
    """A disallowed key's score, however large, does not change the attention output."""
    q, k, k_huge, mask = huge_disallowed_scores()
    v = torch.randn(2, 2, 6, 3, generator=gen(122))  # the public case's scores, through attention
    out, out_huge = at.attention(q, k, v, mask), at.attention(q, k_huge, v, mask)
    ok = tuple(out_huge.shape) == (2, 2, 5, 3) and judge.is_close(
        out, out_huge, atol=1e-6, rtol=1e-5
    )
    assert ok, (
        "a disallowed key's score, however large, must not change the attention output (nor make "
        "it nan): disallowed scores become -inf before the softmax, and any max shift or "
        "normaliser is taken over the allowed keys only"
    )


@pytest.mark.task("ch07.5")
@examples(10)
@example(**FAR_EXAMPLE)
@given(**FAR_CASE)
def test_attention_ignores_disallowed_keys_whatever_the_allowed_scores(
    lead, tq, tk, d, sign, m, dtype, seed
):
    """With every allowed score far below -1e4 (or far above 0) the output is still made of allowed values only, as PyTorch's."""
    q, k, v, mask, best = far_scores(lead, tq, tk, d, 3, sign, m, dtype, seed)
    what = far_text(case_text(q, k, v, mask), sign, m)
    with because(f"attention({what}) raised"):
        out = at.attention(q, k, v, mask)
    want = v[..., best, :]  # each query: the value of its highest-scoring allowed key
    assert tuple(out.shape) == tuple(want.shape) and judge.is_close(
        out, want, atol=1e-5, rtol=1e-5
    ), (
        f"attention({what}) returned {brief(out)}, while F.scaled_dot_product_attention gives "
        f"each query the value of its highest-scoring allowed key "
        f"({first_difference(out, want, atol=1e-5) if tuple(out.shape) == tuple(want.shape) else list(want.shape)}): "
        "a disallowed key must get weight exactly 0 whatever the allowed scores are. A finite "
        "fill (-1e4, -1e9) loses to allowed scores below it, and an exp without the row's "
        "maximum subtracted overflows; use float('-inf') and torch.softmax"
    )


@pytest.mark.task("ch07.5")
def test_attention_gradients_equal_pytorchs():
    """Gradients of attention with respect to q, k and v equal F.scaled_dot_product_attention's."""
    g = gen(134)
    q = torch.randn(2, 3, 4, 6, generator=g, dtype=torch.float64) * 2
    k = torch.randn(2, 3, 7, 6, generator=g, dtype=torch.float64) * 2
    v = torch.randn(2, 3, 7, 5, generator=g, dtype=torch.float64)
    mask = random_mask(4, 7, 135)
    out_grad = torch.randn(2, 3, 4, 5, generator=g, dtype=torch.float64)
    with because("backward through attention raised"):
        seen = attention_gradients(q, k, v, mask, out_grad)
    qr, kr, vr = (t.clone().requires_grad_(True) for t in (q, k, v))
    (F.scaled_dot_product_attention(qr, kr, vr, attn_mask=mask) * out_grad).sum().backward()
    for name, ref in (("q", qr.grad), ("k", kr.grad), ("v", vr.grad)):
        got = seen[name]
        assert got is not None and judge.is_close(got, ref, atol=1e-8, rtol=1e-5), (
            f"the gradient of attention with respect to {name} differs from "
            f"F.scaled_dot_product_attention's "
            f"({'none arrived' if got is None else first_difference(got, ref, atol=1e-8)}): "
            "compute the weights and their product with v inside the graph (no detach, no .data)"
        )


# ---------------------------------------------------------------- ch07.6


MHSA_CONFIGS = [  # E, H, T, B, causal: Dh != E wherever a 1/sqrt(E) scale could hide
    (12, 3, 3, 3, True),  # B == T == H
    (16, 2, 8, 2, True),
    (9, 3, 3, 1, False),
    (8, 8, 4, 2, True),  # Dh == 1
    (6, 1, 5, 2, True),  # one head: Dh == E
    (10, 2, 1, 3, True),  # a single position
    (12, 4, 6, 1, False),
]


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
@pytest.mark.parametrize("E, H, T, B, causal", MHSA_CONFIGS, ids=str)
def test_outputs_and_weights_equal_nn_multiheadattention(E, H, T, B, causal):
    """Output and last_weights equal nn.MultiheadAttention's with the same projection weights."""
    params = make_params(E, 107 + E + H, scale=2.0)
    x = torch.randn(B, T, E, generator=gen(108 + T)) * 2
    with because(f"MultiHeadSelfAttention({E}, {H}, causal={causal}) on x[{B}, {T}, {E}] raised"):
        seen = mhsa_forwards(E, H, causal, [x], params)
    (got,), (w,) = seen["outs"], seen["weights"]
    expected, weights = reference_forward(params, x, H, causal)
    close = tuple(got.shape) == tuple(expected.shape) and judge.is_close(
        got, expected, atol=1e-4, rtol=1e-5
    )
    assert close, (
        f"MultiHeadSelfAttention({E}, {H}, causal={causal}) on x[{B}, {T}, {E}] must compute the "
        f"same function as nn.MultiheadAttention with the same projection weights "
        f"({first_difference(got, expected, atol=1e-4)}); "
        + mhsa_problem(diagnose_mhsa(got, params, x, H, causal))
    )
    ok = isinstance(w, torch.Tensor) and tuple(w.shape) == (B, H, T, T)
    assert ok and judge.is_close(w, weights, atol=1e-5, rtol=1e-5), (
        f"last_weights must hold the per-head attention weights [B, H, T, T] = {[B, H, T, T]} of "
        f"the latest forward, got {brief(w) if not ok else first_difference(w, weights)}"
    )


def far_params(E: int, sign: float, m: float) -> dict:
    """Projections under which q = m x, k = sign m x, v = x and proj is the identity."""
    eye = torch.eye(E)
    return {
        "qkv.weight": torch.cat([m * eye, sign * m * eye, eye]),
        "qkv.bias": torch.zeros(3 * E),
        "proj.weight": eye.clone(),
        "proj.bias": torch.zeros(E),
    }


def far_inputs(B: int, T: int, E: int, H: int, seed: int):
    """x[b, t] = s[b, t] w[b], each head's slice of w[b] with |w_h|^2 = sqrt(Dh) and the
    s[b, t] in [1, 2] at least 1/T apart: a head's score of query t and key j is then
    sign m^2 s[b, t] s[b, j]."""
    g, dh = gen(seed), E // H
    w = torch.randn(B, H, dh, generator=g, dtype=torch.float64)
    w = (w / w.norm(dim=-1, keepdim=True) * dh**0.25).reshape(B, 1, E)
    s = 1 + torch.stack([torch.randperm(T, generator=g) for _ in range(B)]).double() / T
    return (s[..., None] * w).float(), s


FAR_MODELS = [  # E, H, T, B, sign, m
    (8, 2, 5, 2, -1.0, 1e2),  # allowed scores -1e4..-4e4
    (6, 3, 4, 1, -1.0, 1e5),  # -1e10..-4e10: below a -1e9 fill too
    (4, 1, 6, 2, 1.0, 1e3),  # +1e6..+4e6: an unshifted exp overflows
]


@pytest.mark.task("ch07.6")
def test_a_causal_model_masks_the_future_whatever_the_scores():
    """With every allowed score far below -1e4 (or far above 0) no position attends to a later one."""
    for E, H, T, B, sign, m in FAR_MODELS:
        check_far_model(E, H, T, B, sign, m)


def check_far_model(E, H, T, B, sign, m):
    """Run one FAR_MODELS case through the student's module and assert on what came back."""
    x, s = far_inputs(B, T, E, H, seed=150 + T)
    call = (
        f"MultiHeadSelfAttention({E}, {H}, causal=True) with q = {m:g} x, k = {sign * m:g} x "
        f"(allowed scores {'-' if sign < 0 else '+'}{m * m:.0e}..{'-' if sign < 0 else '+'}"
        f"{4 * m * m:.0e}), v = x and proj the identity, on x[{B}, {T}, {E}]"
    )
    with because(f"{call} raised"):
        seen = mhsa_forwards(E, H, True, [x], far_params(E, sign, m))
    (out,), (w,) = seen["outs"], seen["weights"]
    rank = torch.where(
        torch.ones(T, T, dtype=torch.bool).tril(), sign * s[:, None, :], -float("inf")
    )
    best = rank.argmax(dim=-1)  # (B, T): the key each query attends to, among keys <= it
    want_w = F.one_hot(best, T).float()[:, None].expand(B, H, T, T)
    ok = isinstance(w, torch.Tensor) and tuple(w.shape) == (B, H, T, T)
    assert ok, f"{call}: last_weights should be [B, H, T, T] = {[B, H, T, T]}, got {brief(w)}"
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    largest = w[..., future].abs().max().item()
    assert largest == 0, (
        f"{call}: last_weights gives later positions weights up to {largest:.3g}; they must be "
        "exactly 0 whatever the allowed scores are. "
        + mhsa_problem(
            "A finite fill (-1e4, -1e9) loses to allowed scores below it: mask the scores "
            "with float('-inf') before the softmax"
        )
    )
    assert judge.is_close(w, want_w, atol=1e-6, rtol=0), (
        f"{call}: last_weights {first_difference(w, want_w, atol=1e-6, rtol=0)}; each query "
        "puts all its weight on its highest-scoring earlier key here (the next one scores "
        f"{m * m / T:.0e} lower) — subtract the row's maximum over the allowed keys before exp "
        "(torch.softmax does), or exp overflows. "
        + mhsa_problem("the weights are the softmax over the allowed keys")
    )
    want = torch.stack([x[b, best[b]] for b in range(B)])  # v = x, proj = identity
    assert judge.is_close(out, want, atol=1e-4, rtol=1e-5), (
        f"{call}: the output {first_difference(out, want, atol=1e-4)}; with these projections "
        "each position's output is x at the key it attends to"
    )


@probe
def mhsa_long(E, H, causal, x, params):
    """MultiHeadSelfAttention(E, H, causal) holding ``params`` on one long x: its output and
    the shape of last_weights (the weights themselves are too large to send)."""
    model = build(E, H, causal, params)
    with torch.no_grad():
        out = model(x)
    w = getattr(model, "last_weights", None)
    return {"out": out, "weights_shape": tuple(w.shape) if isinstance(w, torch.Tensor) else None}


@pytest.mark.task("ch07.6")
def test_any_sequence_length_runs():
    """A sequence longer than the usual block sizes (1030 > 256, 512, 1024) gets the same function."""
    E, H, T = 2, 1, 1030
    params = make_params(E, 170)
    x = torch.randn(1, T, E, generator=gen(171))
    call = f"MultiHeadSelfAttention({E}, {H}, causal=True) on x[1, {T}, {E}]"
    with because(
        f"{call} raised: the module has no maximum length — build the causal mask for the T of "
        "each call (causal_mask(T, device=x.device)), not once for a fixed size that a longer "
        "sequence outgrows"
    ):
        seen = mhsa_long(E, H, True, x, params)
    expected, _ = reference_forward(params, x, H, True)
    got = seen["out"]
    ok = tuple(got.shape) == tuple(expected.shape)
    assert ok and judge.is_close(got, expected, atol=1e-4, rtol=1e-5), (
        f"{call} must compute what nn.MultiheadAttention does at every length: "
        f"{brief(got) if not ok else first_difference(got, expected, atol=1e-4)}"
    )
    assert seen["weights_shape"] == (1, H, T, T), (
        f"after {call} last_weights has shape {seen['weights_shape']}, expected "
        f"{(1, H, T, T)}: the weights of that call, every query and key"
    )


@pytest.mark.task("ch07.6")
def test_the_default_is_causal():
    """MultiHeadSelfAttention(E, H) without the causal argument masks the future."""
    params = make_params(8, 140)
    x = torch.randn(2, 4, 8, generator=gen(141))
    (got,) = mhsa_forwards(8, 2, None, [x], params)["outs"]
    expected, _ = reference_forward(params, x, 2, True)
    close = judge.is_close(got, expected, atol=1e-4, rtol=1e-5)
    assert close, (
        "MultiHeadSelfAttention(E, H) must be causal by default (causal=True): "
        + mhsa_problem(diagnose_mhsa(got, params, x, 2, True))
    )


@pytest.mark.task("ch07.6")
def test_last_weights_follow_the_latest_call():
    """One module serves any length in any order, and a batch of no examples: each forward's output and last_weights are that call's own."""
    params = make_params(12, 142)
    xs = [
        torch.randn(2, 5, 12, generator=gen(143)),
        torch.randn(1, 3, 12, generator=gen(144)),
        torch.zeros(0, 4, 12),  # a batch of no examples (the last of a filtered dataset)
        torch.randn(2, 7, 12, generator=gen(145)),
    ]
    with because(
        "MultiHeadSelfAttention(12, 3) raised on one of x[2, 5, 12], x[1, 3, 12], x[0, 4, 12] "
        "(a batch of no examples, as the last batch of a filtered dataset can be), x[2, 7, 12]: "
        "an empty batch is a legal tensor, and forward returns [B, T, E] for it too; a view or "
        "reshape that infers an axis with -1 (view(B, -1, H, Dh), reshape(B, -1, E)) cannot "
        "infer it from zero elements: spell every size out from x.shape"
    ):
        seen = mhsa_forwards(12, 3, True, xs, params)
    for i, (x, out, w) in enumerate(zip(xs, seen["outs"], seen["weights"])):
        expected, want = reference_forward(params, x, 3, True)
        ok = isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(expected.shape)
        assert ok and judge.is_close(out, expected, atol=1e-4, rtol=1e-5), (
            f"forward call {i + 1} (x{list(x.shape)}, after calls of other lengths) differs from "
            f"nn.MultiheadAttention ({first_difference(out, expected, atol=1e-4)}): nothing "
            "computed for an earlier length (a mask, a cache) may be reused for another one"
        )
        ok = isinstance(w, torch.Tensor) and tuple(w.shape) == tuple(want.shape)
        assert ok and judge.is_close(w, want, atol=1e-5, rtol=1e-5), (
            f"after forward call {i + 1} (x{list(x.shape)}) last_weights must be that call's "
            f"weights [B, H, T, T] = {list(want.shape)}, got "
            f"{brief(w) if not ok else first_difference(w, want)}: set it on every forward"
        )


@probe
def checkpoints_across_forwards(E, H, params, x_run, x_other, x_check):
    """The usual checkpoint round trips between MultiHeadSelfAttention(E, H) modules, each
    state_dict loaded strictly: (1) a module holding ``params`` that ran on x_run into a new
    one that never ran; (2) a new one holding ``params`` that never ran into one (fresh init)
    that ran on x_other; (3) the first into that one again, after it ran on x_check. Per round
    trip: the load's error text (None when it loaded) and the target's output on x_check."""
    used, never_ran = build(E, H, None, params), build(E, H, None, params)
    target_1, target_2 = build(E, H, None, None), build(E, H, None, None)
    with torch.no_grad():
        used(x_run)
        target_2(x_other)
    seen = []
    for source, target in ((used, target_1), (never_ran, target_2), (used, target_2)):
        try:
            target.load_state_dict(source.state_dict())
            error = None
        except RuntimeError as err:
            error = str(err)
        with torch.no_grad():
            seen.append({"error": error, "out": target(x_check)})
    return seen


@pytest.mark.task("ch07.6")
@pytest.mark.points(1)  # one of its two points went to the any-sequence-length test
def test_a_checkpoint_loads_whether_or_not_a_forward_ran():
    """A state_dict saved before or after any forward loads strictly into a module of the same configuration, before or after its own forwards, and brings the saved function with it."""
    E, H = 8, 2
    params = make_params(E, 160)
    x_run, x_other, x_check = (torch.randn(2, t, E, generator=gen(161 + t)) for t in (5, 3, 4))
    with because(
        f"saving a MultiHeadSelfAttention({E}, {H}).state_dict() and loading it into another "
        "one failed outside load_state_dict"
    ):
        seen = checkpoints_across_forwards(E, H, params, x_run, x_other, x_check)
    expected, _ = reference_forward(params, x_check, H, True)
    trips = (
        "the state_dict of a module that ran a forward on [2, 5, 8], loaded into a new module "
        "(a checkpoint saved after training, loaded in a new program)",
        "the state_dict of a new module that never ran, loaded into one that ran on [2, 3, 8]",
        "the state_dict of the module that ran on [2, 5, 8], loaded into one that ran on "
        "[2, 3, 8] and [2, 4, 8]",
    )
    for trip, got in zip(trips, seen):
        assert got["error"] is None, (
            f"{trip}: load_state_dict(strict=True) raised {got['error']!r}. A state_dict holds "
            "what the module computes with (parameters, persistent buffers), so it must be the "
            "same set of entries, of the same shapes, whether or not a forward ran; last_weights "
            "is an observation of the latest call (its [B, H, T, T] changes with every batch): "
            "keep it a plain attribute, not a registered buffer (or register it with "
            "persistent=False)"
        )
        assert judge.is_close(got["out"], expected, atol=1e-4, rtol=1e-5), (
            f"after loading {trip}, the module's output on [2, 4, 8] is not the saved module's "
            f"({first_difference(got['out'], expected, atol=1e-4)}): qkv and proj must carry "
            "everything the forward computes with"
        )


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
@pytest.mark.parametrize("E, H, T", [(12, 3, 5), (8, 4, 4)], ids=["T!=H", "T==H"])
def test_gradients_never_reach_the_future(E, H, T):
    """In a causal model no output has a gradient with respect to a later input, and every
    earlier input reaches it."""
    x = torch.randn(2, T, E, generator=gen(101))
    rows = mhsa_gradients(E, H, True, x, make_params(E, 100), torch.ones(2, T, E))["rows"]
    for t in range(T):
        g = rows[t]
        leak = g[:, t + 1 :].abs().max().item() if t < T - 1 else 0.0
        assert leak == 0, (
            f"the output at position {t} has a nonzero gradient (up to {leak:.3g}) with respect to "
            "a later input: in a causal model no path may lead from a future position to an "
            "earlier output (not through the softmax's normalizer or a max shift taken over "
            "masked keys, not through a head split that mixes positions)"
        )
        judge.all_true(
            g[:, : t + 1].abs().sum(-1) > 0,
            f"the output at position {t} has no gradient with respect to some earlier (or its own) "
            "position: every allowed key must take part in the attention",
            shape=(x.shape[0], t + 1),
        )


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_gradients_equal_nn_multiheadattentions(causal):
    """Gradients of the input and of qkv's and proj's parameters equal nn.MultiheadAttention's."""
    E, H, T = 12, 3, 4
    params = make_params(E, 145, scale=1.5)
    x = torch.randn(2, T, E, generator=gen(146))
    out_grad = torch.randn(2, T, E, generator=gen(147))
    with because(f"backward through MultiHeadSelfAttention({E}, {H}, causal={causal}) raised"):
        seen = mhsa_gradients(E, H, causal, x, params, out_grad)
    ref = torch_reference(params, E, H)
    xr = x.clone().requires_grad_(True)
    blocked = ~torch.ones(T, T, dtype=torch.bool).tril() if causal else None
    out, _ = ref(xr, xr, xr, attn_mask=blocked, need_weights=False)
    (out * out_grad).sum().backward()
    want = {
        "x": xr.grad,
        "qkv.weight": ref.in_proj_weight.grad,
        "qkv.bias": ref.in_proj_bias.grad,
        "proj.weight": ref.out_proj.weight.grad,
        "proj.bias": ref.out_proj.bias.grad,
    }
    for name, w in want.items():
        g = seen["x"] if name == "x" else seen["params"].get(name)
        ok = isinstance(g, torch.Tensor) and tuple(g.shape) == tuple(w.shape)
        assert ok and judge.is_close(g, w, atol=1e-4, rtol=1e-4), (
            f"the gradient of {name} differs from nn.MultiheadAttention's "
            f"({'none arrived' if g is None else brief(g) if not ok else first_difference(g, w, atol=1e-4)}): "
            "every step from qkv to proj must stay in the graph (last_weights may be detached, "
            "the weights used for the output may not)"
        )


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
@pytest.mark.parametrize("E, H, T", [(12, 3, 3), (8, 2, 7)], ids=["T==H", "long"])
def test_causal_outputs_ignore_any_future_change(E, H, T):
    """Changing only later positions leaves every earlier output of a causal model identical, bit for bit."""
    x = torch.randn(2, T, E, generator=gen(103))
    xs = [x]
    for cut in range(1, T):
        x2 = x.clone()
        x2[:, cut:] = torch.randn(2, T - cut, E, generator=gen(104 + cut)) * 3
        xs.append(x2)
    outs = mhsa_forwards(E, H, True, xs, make_params(E, 102))["outs"]
    for y in outs:  # an empty or NaN output is "unchanged" vacuously
        judge.answer(
            y, (2, T, E), f"MultiHeadSelfAttention({E}, {H}, causal=True) on x[2, {T}, {E}]"
        )
    for cut in range(1, T):
        same = judge.is_equal(outs[0][:, :cut], outs[cut][:, :cut])
        assert same, (
            f"changing only positions {cut}.. changed an earlier output of a causal model, which "
            "must stay identical bit for bit: look for scores not masked to -inf before the "
            "softmax (a max shift or normaliser over masked keys leaks too), a mask that lets "
            "query i see key i+1, or a head split that mixes positions"
        )


@pytest.mark.task("ch07.6")
def test_a_bidirectional_model_does_see_the_future():
    """With causal=False an earlier output depends on a later input."""
    x = torch.randn(1, 4, 8, generator=gen(106))
    x2 = x.clone()
    x2[:, 3] += 1.0
    y, y2 = mhsa_forwards(8, 2, False, [x, x2], make_params(8, 105))["outs"]
    moved = (y[:, 0] - y2[:, 0]).abs().max().item()
    assert moved > 1e-4, (
        "with causal=False every position must attend to every other, later ones included: "
        "changing position 3 left the output at position 0 unchanged (no mask at all when causal "
        "is False)"
    )


@pytest.mark.task("ch07.6")
def test_the_projections_are_the_contracts_linears():
    """qkv is nn.Linear(E, 3E) and proj is nn.Linear(E, E): their parameters have those shapes."""
    seen = mhsa_forwards(10, 2, True, [], None)["params"]
    shapes = {n: tuple(p.shape) for n, p in seen.items()}
    want = {"qkv.weight": (30, 10), "qkv.bias": (30,), "proj.weight": (10, 10), "proj.bias": (10,)}
    missing = {n: s for n, s in want.items() if shapes.get(n) != s}
    assert not missing, (
        f"MultiHeadSelfAttention(10, 2) must hold qkv = nn.Linear(10, 30) and proj = "
        f"nn.Linear(10, 10); its parameters are {shapes}"
    )


@pytest.mark.task("ch07.6")
def test_an_indivisible_embedding_is_rejected():
    """MultiHeadSelfAttention raises ValueError when n_heads is not a positive divisor of embed_dim."""
    seen = raised_by("MultiHeadSelfAttention", [10, 4])
    assert seen is not None and seen["value_error"], (
        f"MultiHeadSelfAttention(10, 4) must raise ValueError (10 features do not split into 4 "
        f"equal heads); it {'returned' if seen is None else 'raised ' + seen['type']}"
    )
    seen = raised_by("MultiHeadSelfAttention", [8, 0])
    assert seen is not None and seen["value_error"], (
        f"MultiHeadSelfAttention(8, 0) must raise ValueError (no heads is not a split); it "
        f"{'returned' if seen is None else 'raised ' + seen['type']}"
    )


@pytest.mark.task("ch07.6")
@pytest.mark.cuda
def test_the_module_runs_on_the_gpu():
    """On CUDA the module (its causal mask included) runs on the input's device and gives the CPU's result."""
    params = make_params(16, 148)
    x = torch.randn(2, 6, 16, generator=gen(149))
    with because("MultiHeadSelfAttention moved to CUDA raised on a CUDA input"):
        out, where, cpu = mhsa_on_gpu(16, 4, True, x, params)
    assert where.startswith("cuda") and judge.is_close(out, cpu, atol=1e-4, rtol=1e-5), (
        f"on CUDA the output must stay on the GPU and equal the CPU's ({where}, "
        f"{first_difference(out, cpu, atol=1e-4)}): build the mask on x.device"
    )


# ------------------------------------------------ dtypes and layouts the float32 tests miss

# (atol, rtol) against float64 arithmetic on the same (rounded) values: a few of the
# dtype's own roundings, far below any formula mistake
REDUCED = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2), "float64": (1e-10, 1e-8)}


def all_dtype_cases():
    """(dtype, mask name, q [2, 3, 4], k [2, 5, 4], v [2, 5, 3], mask) for each dtype of
    REDUCED and each mask kind: none, a lower-triangular one (the last query sees every
    key) and a random [3, 5] one."""
    masks = {
        "none": None,
        "causal": torch.ones(3, 5, dtype=torch.bool).tril(2),
        "random": random_mask(3, 5, 163),
    }
    for dtype in REDUCED:
        q, k, v = (
            torch.randn(2, t, d, generator=gen(160 + i)).to(getattr(torch, dtype))
            for i, (t, d) in enumerate(((3, 4), (5, 4), (5, 3)))
        )
        for name, mask in masks.items():
            yield dtype, name, q, k, v, mask


@pytest.mark.task("ch07.4")
def test_weights_keep_half_bfloat16_and_double_inputs_dtype():
    """attention_weights of float16, bfloat16 or float64 q, k (with or without a mask) keeps
    their dtype and equals PyTorch's weights."""
    for dtype, name, q, k, _, mask in all_dtype_cases():
        atol, rtol = REDUCED[dtype]
        what = f"attention_weights({dtype} q[2, 3, 4], k[2, 5, 4], mask={name})"
        with because(
            f"{what} raised: build every intermediate (the masked scores, a fill value) in "
            "the scores' dtype, never in the default float32"
        ):
            w = at.attention_weights(q, k, mask)
        assert isinstance(w, torch.Tensor) and w.dtype == q.dtype and w.shape == (2, 3, 5), (
            f"{what} returned {brief(w)}, expected [2, 3, 5] in {dtype} like "
            "F.scaled_dot_product_attention: a mask or bias made with torch.zeros/torch.full "
            "without dtype= is float32 and promotes the scores (masked_fill keeps their dtype)"
        )
        want = sdpa_weights(q.double(), k.double(), mask)
        assert judge.is_close(w.double(), want, atol=atol, rtol=rtol), (
            f"{what} differs from PyTorch's weights on the same values "
            f"({first_difference(w.double(), want, atol=atol, rtol=rtol)})"
        )


@pytest.mark.task("ch07.5")
def test_attention_keeps_half_bfloat16_and_double_inputs_dtype():
    """attention of float16, bfloat16 or float64 q, k, v (with or without a mask) keeps their
    dtype and equals F.scaled_dot_product_attention."""
    for dtype, name, q, k, v, mask in all_dtype_cases():
        atol, rtol = REDUCED[dtype]
        what = f"attention({dtype} q[2, 3, 4], k[2, 5, 4], v[2, 5, 3], mask={name})"
        with because(
            f"{what} raised: build every intermediate (the masked scores, a fill value) in "
            "the scores' dtype, never in the default float32, so weights @ v meets v's dtype"
        ):
            got = at.attention(q, k, v, mask)
        sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        assert isinstance(got, torch.Tensor) and got.dtype == sdpa.dtype == q.dtype, (
            f"{what} returned {brief(got)}; F.scaled_dot_product_attention returns {dtype}: "
            "a mask or bias made without dtype= is float32 and promotes the scores"
        )
        want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
        assert judge.is_close(got.double(), want, atol=atol, rtol=rtol), (
            f"{what} differs from F.scaled_dot_product_attention on the same values "
            f"({first_difference(got.double(), want, atol=atol, rtol=rtol)})"
        )


@probe
def mhsa_as(E, H, causal, params, x, dtype, layouts):
    """One MultiHeadSelfAttention(E, H, causal) holding ``params``, cast to ``dtype`` (a
    torch attribute name), run on x in that dtype rebuilt in each of ``layouts`` (those of
    harness.layouts, and "time_major": stored [T, B, E], seen as [B, T, E]): per layout the
    output and last_weights."""
    dt = getattr(torch, dtype)
    model = build(E, H, causal, params).to(dt)
    x = x.to(dt)
    seen = {}
    with torch.no_grad():
        for layout in layouts:
            if layout == "time_major":
                laid = x.transpose(0, 1).contiguous().transpose(0, 1)
            else:
                laid = laid_out(x, layout)
            seen[layout] = {"out": model(laid), "weights": model.last_weights}
    return seen


@pytest.mark.task("ch07.6")
def test_the_module_cast_to_another_dtype_computes_in_it():
    """MultiHeadSelfAttention moved to float16, bfloat16 or float64 (causal or not) returns
    its output and last_weights in that dtype, equal to nn.MultiheadAttention's."""
    E, H, T, B = 6, 2, 4, 2
    params = make_params(E, 170)
    x = torch.randn(B, T, E, generator=gen(171))
    for dtype, causal in ((d, c) for d in REDUCED for c in (True, False)):
        dt = getattr(torch, dtype)
        held = {n: p.to(dt).double() for n, p in params.items()}  # what the cast module holds
        atol, rtol = REDUCED[dtype]
        what = f"MultiHeadSelfAttention({E}, {H}, causal={causal}).to(torch.{dtype}) on x[{B}, {T}, {E}]"
        with because(
            f"{what} raised: build the mask and every other intermediate in x's dtype (or "
            "bool), never in the default float32"
        ):
            seen = mhsa_as(E, H, causal, params, x, dtype, ["contiguous"])["contiguous"]
        out, w = seen["out"], seen["weights"]
        assert isinstance(out, torch.Tensor) and out.dtype == dt and out.shape == (B, T, E), (
            f"{what} returned {brief(out)}, expected [{B}, {T}, {E}] in {dtype}: a module cast "
            "with .to(dtype) computes in that dtype (a mask or bias made without dtype= is "
            "float32 and promotes the scores)"
        )
        assert isinstance(w, torch.Tensor) and w.dtype == dt, (
            f"after {what}, last_weights is {brief(w)}: expected the call's weights, in {dtype}"
        )
        blocked = ~torch.ones(T, T, dtype=torch.bool).tril() if causal else None
        with torch.no_grad():  # float64 arithmetic on exactly the values the module holds
            want, weights = torch_reference(held, E, H).double()(
                *[x.to(dt).double()] * 3,
                attn_mask=blocked,
                need_weights=True,
                average_attn_weights=False,
            )
        ok = judge.is_close(out.double(), want, atol=atol, rtol=rtol) and judge.is_close(
            w.double(), weights, atol=atol, rtol=rtol
        )
        assert ok, (
            f"{what} differs from nn.MultiheadAttention with the same weights (output: "
            f"{first_difference(out.double(), want, atol=atol, rtol=rtol)}; last_weights: "
            f"{first_difference(w.double(), weights, atol=atol, rtol=rtol)})"
        )


MODULE_LAYOUTS = ["transposed", "strided", "offset", "time_major"]


@pytest.mark.task("ch07.6")
def test_the_module_reads_a_batch_in_any_memory_layout():
    """The same [B, T, E] values stored transposed, strided, offset or time-major give the
    same output and last_weights as a contiguous batch."""
    E, H, T, B = 8, 2, 5, 3
    params = make_params(E, 172)
    x = torch.randn(B, T, E, generator=gen(173))
    with because(
        f"MultiHeadSelfAttention({E}, {H}) raised on x[{B}, {T}, {E}] stored in another memory "
        "layout (a transpose, a slice, a time-major buffer): .view needs contiguous memory; "
        "reshape, flatten, unflatten, permute and transpose work on any layout"
    ):
        seen = mhsa_as(E, H, True, params, x, "float32", ["contiguous", *MODULE_LAYOUTS])
    base = seen["contiguous"]
    for layout in MODULE_LAYOUTS:
        got = seen[layout]
        same = judge.is_close(got["out"], base["out"], atol=1e-5, rtol=1e-5) and judge.is_close(
            got["weights"], base["weights"], atol=1e-6, rtol=1e-5
        )
        assert same, (
            f"MultiHeadSelfAttention({E}, {H}) gave another answer for the same x[{B}, {T}, {E}] "
            f"stored {layout} than stored contiguously (output: "
            f"{first_difference(got['out'], base['out'], atol=1e-5)}): the values of a tensor do "
            "not depend on its strides; a reshape of memory (as_strided, view of .storage()) does"
        )


# ------------------------------------------------ the whole int domain of n_heads

HEAD_SWEEP = [(E, n) for E in (1, 4, 6, 12) for n in range(-E - 1, E + 2)]


@probe
def head_count_outcomes(cases):
    """For each (E, n): split_heads(zeros[1, 2, E], n) and MultiHeadSelfAttention(E, n), each
    as None if it returned, else the exception's type name and whether it is a ValueError."""

    def outcome(call, *args):
        try:
            call(*args)
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            return {"type": type(exc).__name__, "value_error": isinstance(exc, ValueError)}
        return None

    def built(E, n):  # a module that builds must also work: its output on x[1, 2, E]
        got = outcome(at.MultiHeadSelfAttention, E, n)
        if got is not None:
            return got
        try:
            out = at.MultiHeadSelfAttention(E, n)(torch.ones(1, 2, E))
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            return {"built": f"its forward raised {type(exc).__name__}"}
        return {"built": out.detach() if isinstance(out, torch.Tensor) else repr(out)[:80]}

    return [
        {
            "split_heads": outcome(at.split_heads, torch.zeros(1, 2, E), n),
            "MultiHeadSelfAttention": built(E, n),
        }
        for E, n in cases
    ]


@pytest.mark.task("ch07.1")
def test_split_accepts_exactly_the_positive_divisors():
    """split_heads raises ValueError for every n_heads that is not a positive divisor of E
    (zero and negative counts included) and accepts every positive divisor."""
    seen = head_count_outcomes(HEAD_SWEEP)
    wrong = []
    for (E, n), got in zip(HEAD_SWEEP, seen):
        got = got["split_heads"]
        divisor = n >= 1 and E % n == 0
        if (got is None) != divisor or (got is not None and not got["value_error"]):
            wrong.append(f"n_heads={n} with E={E}: {'returned' if got is None else got['type']}")
    assert not wrong, (
        f"split_heads(x[1, 2, E], n_heads) over n_heads from -E-1 to E+1: {wrong[:4]}; expected "
        "ValueError exactly when n_heads is not a positive divisor of E. A negative count "
        "divides E too (E % -2 == 0), so test n_heads < 1 as well as the remainder, before "
        "any view"
    )


@pytest.mark.task("ch07.6")
def test_the_module_accepts_exactly_the_positive_divisors():
    """MultiHeadSelfAttention(E, n) raises ValueError at construction for every n that is not
    a positive divisor of E (zero and negative counts included) and builds for every one that is."""
    seen = head_count_outcomes(HEAD_SWEEP)
    wrong = []
    for (E, n), got in zip(HEAD_SWEEP, seen):
        got = got["MultiHeadSelfAttention"]
        divisor = n >= 1 and E % n == 0
        if "built" not in got:
            if divisor or not got["value_error"]:
                wrong.append(f"({E}, {n}): raised {got['type']}")
        elif not divisor:
            wrong.append(f"({E}, {n}): built")
        else:
            out = got["built"]
            works = isinstance(out, torch.Tensor) and out.shape == (1, 2, E)
            try:
                judge.all_finite(out)
            except AssertionError:
                works = False
            if not works:
                seen_out = brief(out) if isinstance(out, torch.Tensor) else out
                wrong.append(f"({E}, {n}): built, but on x[1, 2, {E}] gave {seen_out}")
    assert not wrong, (
        f"MultiHeadSelfAttention(E, n_heads) over n_heads from -E-1 to E+1: {wrong[:4]}; "
        "expected ValueError in __init__ exactly when n_heads is not a positive divisor of "
        "embed_dim. A negative count divides embed_dim too (8 % -2 == 0): check n_heads < 1 "
        "as well as the remainder, when the module is built rather than at the first forward"
    )


# ------------------------------------------------ another device: results stay on it

DEVICE_DTYPES = ["float32", "float16", "bfloat16", "float64"]
DEVICE_MASKS = ["none", "full", "per-example", "keys"]


@probe
def on_meta(dtypes, masks, parts):
    """The functions named in ``parts`` ("attention_weights", "attention", "module") on meta tensors (a device other than the CPU that holds
    no values, like a GPU you don't have): for each case the result's device, dtype and
    shape, or the exception's type and text."""

    seen = devices.described_on_meta

    meta = torch.device("meta")
    shapes = {"full": (3, 5), "per-example": (2, 1, 5), "keys": (5,)}
    cases = {}
    for dtype in dtypes if {"attention_weights", "attention"} & set(parts) else ():
        dt = getattr(torch, dtype)
        q, k, v = (torch.zeros(2, t, d, dtype=dt, device=meta) for t, d in ((3, 4), (5, 4), (5, 6)))
        for kind in masks:
            mask = (
                None if kind == "none" else torch.ones(shapes[kind], dtype=torch.bool, device=meta)
            )
            if "attention_weights" in parts:
                cases[f"attention_weights({dtype}, mask={kind})"] = seen(
                    at.attention_weights, q, k, mask
                )
            if "attention" in parts:
                cases[f"attention({dtype}, mask={kind})"] = seen(at.attention, q, k, v, mask)
    if "module" not in parts:
        return cases
    x = torch.zeros(2, 3, 6, device=meta)
    cases["split_heads"] = seen(at.split_heads, x, 2)
    cases["merge_heads"] = seen(at.merge_heads, torch.zeros(2, 2, 3, 3, device=meta))
    for causal in (True, False):
        model = at.MultiHeadSelfAttention(6, 2, causal).to(meta)
        cases[f"MultiHeadSelfAttention(causal={causal})"] = seen(model, x)
        cases[f"last_weights(causal={causal})"] = seen(getattr, model, "last_weights")
    return cases


def expected_on_meta(dtypes, masks):
    """What on_meta must observe: every result on meta, in the inputs' dtype, of the contract's shape."""
    want = {}
    for dtype in dtypes:
        dt = getattr(torch, dtype)
        for kind in masks:
            want[f"attention_weights({dtype}, mask={kind})"] = ("meta", dt, (2, 3, 5))
            want[f"attention({dtype}, mask={kind})"] = ("meta", dt, (2, 3, 6))
    want["split_heads"] = ("meta", torch.float32, (2, 2, 3, 3))
    want["merge_heads"] = ("meta", torch.float32, (2, 3, 6))
    for causal in (True, False):
        want[f"MultiHeadSelfAttention(causal={causal})"] = ("meta", torch.float32, (2, 3, 6))
        want[f"last_weights(causal={causal})"] = ("meta", torch.float32, (2, 2, 3, 3))
    return want


@pytest.mark.task("ch07.4")
def test_weights_stay_on_the_inputs_device():
    """attention_weights on q, k and a mask of another device (meta) returns its weights
    there, in q's dtype and of shape [..., Tq, Tk], for every mask shape and float dtype."""
    _device_check("attention_weights", ["attention_weights"], "ch07.4")


@pytest.mark.task("ch07.5")
def test_attention_stays_on_the_inputs_device():
    """attention on q, k, v and a mask of another device (meta) returns there, in q's dtype
    and of shape [..., Tq, Dv], for every mask shape and float dtype."""
    _device_check("attention", ["attention("], "ch07.5")


@pytest.mark.task("ch07.6")
def test_the_module_runs_on_another_device():
    """MultiHeadSelfAttention moved to another device (meta) returns its output and
    last_weights [B, H, T, T] there, causal or not; split and merge stay there too."""
    _device_check(
        "module", ["MultiHeadSelfAttention", "last_weights", "split_heads", "merge_heads"], "ch07.6"
    )


def cpu_value_problem(part):
    """The same call on CPU values, judged against PyTorch: None, or what differs."""
    q, k, v = (torch.randn(2, t, d, generator=gen(190 + t)) for t, d in ((3, 4), (5, 4), (5, 6)))
    mask = random_mask(3, 5, 193)
    if part == "attention_weights":
        got, want = at.attention_weights(q, k, mask), sdpa_weights(q, k, mask)
    elif part == "attention":
        got = at.attention(q, k, v, mask)
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    else:
        params, x = make_params(6, 194), torch.randn(2, 3, 6, generator=gen(195))
        got = mhsa_forwards(6, 2, True, [x], params)["outs"][0]
        want = reference_forward(params, x, 2, True)[0]
    if judge.is_close(got, want, atol=1e-5, rtol=1e-4):
        return None
    return f"on the CPU the same call differs from PyTorch's ({first_difference(got, want, atol=1e-5)})"


def _device_check(part, prefixes, task):
    got = on_meta(DEVICE_DTYPES, DEVICE_MASKS, [part])
    want = expected_on_meta(DEVICE_DTYPES, DEVICE_MASKS)
    wrong = [p for p in [cpu_value_problem(part)] if p]
    for name, (device, dtype, shape) in want.items():
        if not any(name.startswith(p) for p in prefixes):
            continue
        seen = got.get(name) or {"raised": "nothing observed"}
        if "cannot tell" in seen:
            continue
        if "raised" in seen:
            wrong.append(f"{name} raised {seen['raised']}")
        elif (seen["device"], seen["dtype"], seen["shape"]) != (device, str(dtype), shape):
            wrong.append(
                f"{name} gave {seen['dtype']} {list(seen['shape'])} on {seen['device']}, "
                f"expected {dtype} {list(shape)} on {device}"
            )
    assert not wrong, (
        f"{task} on inputs (and a model) on the meta device, which stands for a GPU here: "
        f"{wrong[:3]}. Every tensor made along the way (a mask, an additive bias, a fill, "
        "the saved weights) must be created on the inputs' device (masked_fill, "
        "torch.zeros(..., device=x.device), x.new_zeros), never on the default CPU: a CUDA "
        "batch would fail or come back on the CPU"
    )
