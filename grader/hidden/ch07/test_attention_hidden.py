"""Hidden tests for ch07: other shapes (T == H, T == Dh, cross-attention, Dv != D), random
masks, PyTorch's attention as the oracle, and causality checked by perturbation and by
gradients. Messages state the property, not the test."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness.target import chapter_module

at = chapter_module("ch07", "attention")


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_mask(tq: int, tk: int, seed: int) -> torch.Tensor:
    """A bool [tq, tk] mask, True = allowed, with at least one allowed key per query."""
    m = torch.rand(tq, tk, generator=gen(seed)) < 0.5
    m[torch.arange(tq), torch.randint(0, tk, (tq,), generator=gen(seed + 1))] = True
    return m


# ---------------------------------------------------------------- ch07.1


@pytest.mark.task("ch07.1")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "B, T, E, H",
    [(2, 3, 12, 3), (1, 5, 10, 2), (3, 4, 16, 4), (2, 6, 24, 4)],
    ids=["T==H", "odd-T", "T==H==Dh", "wide"],
)
def test_split_gives_each_head_a_slice_of_every_position(B, T, E, H):
    x = torch.randn(B, T, E, generator=gen(T * E))
    got = at.split_heads(x, H)
    Dh = E // H
    assert tuple(got.shape) == (B, H, T, Dh), (
        f"splitting [B, T, E] = {[B, T, E]} into {H} heads must give [B, H, T, Dh] = {[B, H, T, Dh]}, "
        f"got {list(got.shape)}: the head axis goes in front of time (transpose after the view)"
    )
    expected = torch.stack([x[..., h * Dh : (h + 1) * Dh] for h in range(H)], dim=1)
    assert torch.equal(got, expected), (
        "head h at position t must hold features h*Dh..(h+1)*Dh-1 of position t, for every t: a reshape (or "
        "a transpose before the split) regroups memory across positions; view(B, T, H, Dh) then transpose(1, 2)"
    )


# ---------------------------------------------------------------- ch07.2


@pytest.mark.task("ch07.2")
@pytest.mark.points(2)
@pytest.mark.parametrize("B, H, T, Dh", [(2, 4, 4, 4), (1, 2, 7, 3), (3, 3, 3, 5)], ids=str)
def test_merge_concatenates_heads_per_position(B, H, T, Dh):
    heads = torch.randn(B, H, T, Dh, generator=gen(H * T * Dh))
    got = at.merge_heads(heads)
    expected = torch.cat(heads.unbind(1), dim=-1)
    assert tuple(got.shape) == (B, T, H * Dh) and torch.equal(got, expected), (
        "merge_heads must return [B, T, H*Dh] where position t holds head 0's output for t, then head 1's, "
        "...: move the head axis next to Dh (transpose(1, 2)) before flattening them together"
    )


@pytest.mark.task("ch07.2")
def test_merge_accepts_the_non_contiguous_output_of_a_split():
    x = torch.randn(2, 6, 12, generator=gen(80))
    heads = x.view(2, 6, 3, 4).transpose(1, 2)  # not contiguous, as attention outputs often are
    try:
        got = at.merge_heads(heads)
    except NotImplementedError:
        raise  # a stub, not a wrong shape
    except RuntimeError as exc:
        raise AssertionError(
            f"merge_heads failed on a non-contiguous [B, H, T, Dh] tensor ({str(exc).splitlines()[0][:90]}): "
            "after transpose the memory is no longer in order, so use reshape or .contiguous().view"
        ) from None
    assert torch.equal(got, x), "merge_heads must exactly undo the correct head split"


# ---------------------------------------------------------------- ch07.3


@pytest.mark.task("ch07.3")
@pytest.mark.parametrize("T", [1, 2, 7])
def test_causal_mask_is_lower_triangular_bool(T):
    got = at.causal_mask(T)
    expected = torch.ones(T, T, dtype=torch.bool).tril()
    assert got.dtype == torch.bool and torch.equal(got, expected), (
        f"the causal mask for T={T} must be bool with True exactly where key j <= query i (diagonal allowed, "
        "later keys not), following F.scaled_dot_product_attention's convention that True means allowed"
    )


@pytest.mark.task("ch07.3")
def test_causal_mask_gives_pytorchs_causal_attention():
    q, k, v = (torch.randn(2, 2, 6, 4, generator=gen(s)) for s in (81, 82, 83))
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=at.causal_mask(6))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(got, ref, atol=1e-5), (
        "used as attn_mask of F.scaled_dot_product_attention, the causal mask must give the same result as "
        "is_causal=True: True means 'may attend', and query i may attend keys 0..i"
    )


@pytest.mark.task("ch07.3")
@pytest.mark.cuda
def test_causal_mask_is_created_on_the_gpu():
    got = at.causal_mask(5, device="cuda")
    assert got.device.type == "cuda" and got.dtype == torch.bool and tuple(got.shape) == (5, 5), (
        "the mask must be created as a bool [T, T] tensor directly on the requested device"
    )


# ---------------------------------------------------------------- ch07.4


def sdpa_weights(q, k, mask=None):
    """The attention weights PyTorch computes: attention with the identity as values."""
    eye = torch.eye(k.shape[-2]).expand(*k.shape[:-1], k.shape[-2])
    return F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)


@pytest.mark.task("ch07.4")
@pytest.mark.points(2)
def test_weights_for_cross_attention_with_a_random_mask():
    q = torch.randn(2, 2, 3, 16, generator=gen(84)) * 1.5
    k = torch.randn(2, 2, 6, 16, generator=gen(85)) * 1.5
    mask = random_mask(3, 6, 86)
    w = at.attention_weights(q, k, mask)
    assert tuple(w.shape) == (2, 2, 3, 6), (
        "weights must be [..., Tq, Tk] (one row per query, one column per key)"
    )
    assert torch.all(w[..., ~mask] == 0), "disallowed keys (mask False) must get weight exactly 0"
    assert torch.allclose(w.sum(-1), torch.ones(2, 2, 3), atol=1e-5), (
        "each query's weights must sum to 1 over its keys (softmax over the last axis, after masking)"
    )
    ref = sdpa_weights(q, k, mask)
    assert torch.allclose(w, ref, atol=2e-5), (
        "the weights must equal PyTorch's scaled dot-product attention weights: softmax of q k^T / sqrt(D) "
        "over keys, with disallowed scores set to -inf before the softmax"
    )


@pytest.mark.task("ch07.4")
def test_weights_scale_with_the_head_dimension():
    q = torch.randn(4, 6, 64, generator=gen(87))  # no head axis: [B, T, D]
    k = torch.randn(4, 6, 64, generator=gen(88))
    w = at.attention_weights(q, k)
    ref = sdpa_weights(q, k)
    assert torch.allclose(w, ref, atol=2e-5), (
        "with D = 64 the scores must be divided by sqrt(64) = 8 before the softmax, over the last axis, "
        "for inputs of any number of leading dimensions"
    )


def huge_disallowed_scores():
    """q, k where keys 4 and 5 score about 1e3 higher than the rest for every query, and a
    mask that disallows exactly those keys."""
    q = torch.rand(2, 2, 5, 8, generator=gen(120)) + 0.5
    k = torch.randn(2, 2, 6, 8, generator=gen(121))
    k_huge = k.clone()
    k_huge[..., 4:, :] = 1e3
    mask = torch.ones(5, 6, dtype=torch.bool)
    mask[:, 4:] = False
    return q, k, k_huge, mask


@pytest.mark.task("ch07.4")
def test_weights_ignore_the_scores_of_disallowed_keys():
    q, k, k_huge, mask = huge_disallowed_scores()
    w, w_huge = at.attention_weights(q, k, mask), at.attention_weights(q, k_huge, mask)
    assert torch.isfinite(w_huge).all() and torch.allclose(w, w_huge, atol=1e-6), (
        "a disallowed key's score, however large, must not change the weights of the allowed keys "
        "(nor make them nan): replace disallowed scores by -inf before the softmax, and take any "
        "max shift or normaliser over the allowed keys only"
    )


# ---------------------------------------------------------------- ch07.5


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
    q = torch.randn(*shape_q, generator=gen(90)) * 2
    k = torch.randn(*shape_k, generator=gen(91)) * 2
    v = torch.randn(*shape_k[:-1], dv, generator=gen(92))
    mask = random_mask(shape_q[-2], shape_k[-2], 93) if masked else None
    got = at.attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert tuple(got.shape) == tuple(ref.shape), "attention must return [..., Tq, Dv]"
    assert torch.allclose(got, ref, atol=1e-4), (
        "attention must equal F.scaled_dot_product_attention with the same boolean mask (True = allowed): "
        "scale by 1/sqrt(D), mask before a softmax over keys, then weight the values"
    )


@pytest.mark.task("ch07.5")
def test_attention_broadcasts_a_per_example_mask():
    q, k, v = (torch.randn(3, 2, 5, 8, generator=gen(s)) for s in (94, 95, 96))
    mask = torch.stack([random_mask(5, 5, 97 + i) for i in range(3)])[:, None]  # (B, 1, T, T)
    got = at.attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.allclose(got, ref, atol=1e-4), (
        "a mask of shape [B, 1, Tq, Tk] must broadcast over the heads exactly as in "
        "F.scaled_dot_product_attention"
    )


@pytest.mark.task("ch07.5")
def test_attention_ignores_the_scores_of_disallowed_keys():
    q, k, k_huge, mask = huge_disallowed_scores()
    v = torch.randn(2, 2, 6, 3, generator=gen(122))
    out, out_huge = at.attention(q, k, v, mask), at.attention(q, k_huge, v, mask)
    assert torch.isfinite(out_huge).all() and torch.allclose(out, out_huge, atol=1e-6), (
        "a disallowed key's score, however large, must not change the attention output (nor make "
        "it nan): disallowed scores become -inf before the softmax, and any max shift or "
        "normaliser is taken over the allowed keys only"
    )


# ---------------------------------------------------------------- ch07.6


def make_model(E, H, causal, seed):
    torch.manual_seed(seed)
    return at.MultiHeadSelfAttention(E, H, causal)


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
def test_gradients_never_reach_the_future():
    model = make_model(12, 3, True, 100)
    x = torch.randn(2, 5, 12, generator=gen(101), requires_grad=True)
    out = model(x)
    for t in range(5):
        (g,) = torch.autograd.grad(out[:, t].sum(), x, retain_graph=True)
        leak = g[:, t + 1 :].abs().max().item() if t < 4 else 0.0
        assert leak == 0, (
            f"the output at position {t} has a nonzero gradient (up to {leak:.3g}) with respect to a later "
            "input: in a causal model no path may lead from a future position to an earlier output (not "
            "through the softmax's normalizer or a max shift taken over masked keys, not through "
            "a head split that mixes positions)"
        )
        reach = (g[:, : t + 1].abs().sum(-1) > 0).all().item()
        assert reach, (
            f"the output at position {t} has no gradient with respect to some earlier (or its own) position: "
            "every allowed key must take part in the attention"
        )


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
@pytest.mark.parametrize("E, H, T", [(12, 3, 3), (8, 2, 7)], ids=["T==H", "long"])
def test_causal_outputs_ignore_any_future_change(E, H, T):
    model = make_model(E, H, True, 102)
    x = torch.randn(2, T, E, generator=gen(103))
    for cut in range(1, T):
        x2 = x.clone()
        x2[:, cut:] = torch.randn(2, T - cut, E, generator=gen(104 + cut)) * 3
        with torch.no_grad():
            same = torch.equal(model(x)[:, :cut], model(x2)[:, :cut])
        assert same, (
            "changing only later positions changed an earlier output of a causal model, which must stay "
            "identical bit for bit: look for scores not masked to -inf before the softmax (a max shift or "
            "normaliser over masked keys leaks too), a mask that lets query i see key i+1, or a head split "
            "that mixes positions"
        )


@pytest.mark.task("ch07.6")
def test_a_bidirectional_model_does_see_the_future():
    model = make_model(8, 2, False, 105)
    x = torch.randn(1, 4, 8, generator=gen(106))
    x2 = x.clone()
    x2[:, 3] += 1.0
    with torch.no_grad():
        moved = (model(x)[:, 0] - model(x2)[:, 0]).abs().max().item()
    assert moved > 1e-4, (
        "with causal=False every position must attend to every other, later ones included"
    )


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "E, H, T, causal", [(12, 3, 3, True), (16, 2, 8, True), (9, 3, 3, False)], ids=str
)
def test_outputs_and_weights_equal_nn_multiheadattention(E, H, T, causal):
    model = make_model(E, H, causal, 107)
    ref = nn.MultiheadAttention(E, H, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(model.qkv.weight)
        ref.in_proj_bias.copy_(model.qkv.bias)
        ref.out_proj.weight.copy_(model.proj.weight)
        ref.out_proj.bias.copy_(model.proj.bias)
    x = torch.randn(2, T, E, generator=gen(108)) * 2
    blocked = ~torch.ones(T, T, dtype=torch.bool).tril() if causal else None
    with torch.no_grad():
        got = model(x)
        expected, weights = ref(
            x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False
        )
    assert torch.allclose(got, expected, atol=1e-4), (
        "the module must compute the same function as nn.MultiheadAttention with the same projection "
        "weights: q, k, v from qkv in that order, heads split per position, scores scaled by 1/sqrt(Dh) "
        "(the per-head dimension), causal masking, heads merged, then proj"
    )
    assert model.last_weights is not None and torch.allclose(
        model.last_weights, weights, atol=1e-5
    ), "last_weights must hold the per-head attention weights [B, H, T, T] of the latest forward"
