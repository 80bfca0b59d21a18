"""Public tests for ch07 — run with `pytest exercises/ch07` (add `--impl solutions` to
see the reference pass)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness.target import chapter_module

at = chapter_module("ch07", "attention")


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def describe_split(x: torch.Tensor, got: torch.Tensor, n_heads: int) -> str:
    """Name the known wrong splits of an arange input by what they produce."""
    B, T, E = x.shape
    Dh = E // n_heads
    if tuple(got.shape) != (B, n_heads, T, Dh):
        return (
            f"shape {list(got.shape)} instead of [B, H, T, Dh] = {[B, n_heads, T, Dh]}: after view(B, T, H, Dh) "
            "the head axis must be moved in front of time with transpose(1, 2)"
        )
    if torch.equal(got, x.reshape(B, n_heads, T, Dh)):
        positions = sorted({int(v) // E for v in got[0, 0].flatten().tolist()})
        return (
            f"head 0 holds {got[0, 0].int().tolist()}, the first {T * Dh} numbers of memory: all features of "
            f"positions {positions}, mixed. A reshape regroups memory; to give each head a slice of every "
            "position's features use view(B, T, H, Dh) and then transpose(1, 2)"
        )
    if torch.equal(got, x.transpose(1, 2).reshape(B, n_heads, T, Dh)):
        return (
            "each head holds its features with time and channel interleaved: transposing [B, T, E] before "
            "splitting E puts positions along the last axis. view(B, T, H, Dh) first, then transpose(1, 2)"
        )
    return f"head 0 of position 1 holds {got[0, 0, 1].tolist()}, expected {x[0, 1, :Dh].tolist()}"


# ---------------------------------------------------------------- ch07.1 split_heads


@pytest.mark.task("ch07.1")
@pytest.mark.points(2)
def test_the_books_split():
    x = torch.arange(32.0).reshape(1, 4, 8)  # B=1, T=4, E=8; position t holds 8t..8t+7
    got = at.split_heads(x, 2)
    expected_head0 = [[0, 1, 2, 3], [8, 9, 10, 11], [16, 17, 18, 19], [24, 25, 26, 27]]
    ok = tuple(got.shape) == (1, 2, 4, 4) and got[0, 0].tolist() == expected_head0
    assert ok, (
        f"split_heads(arange(32).reshape(1, 4, 8), 2): head 0 should hold dims 0-3 of every position "
        f"{expected_head0}; {describe_split(x, got, 2)}"
    )


@pytest.mark.task("ch07.1")
@pytest.mark.points(2)
def test_every_head_holds_its_slice_of_every_position():
    B, T, E, H = 2, 4, 16, 4  # T == Dh, so a transposed split has the right shape
    x = torch.arange(float(B * T * E)).reshape(B, T, E)
    got = at.split_heads(x, H)
    for h in range(H):
        for t in range(T):
            if tuple(got.shape) != (B, H, T, E // H) or not torch.equal(
                got[:, h, t], x[:, t, h * 4 : (h + 1) * 4]
            ):
                raise AssertionError(
                    f"split_heads(x[2, 4, 16], 4)[:, {h}, {t}] should be x[:, {t}, {4 * h}:{4 * h + 4}] (head {h} "
                    f"of position {t}); {describe_split(x, got, H)}"
                )


# ---------------------------------------------------------------- ch07.2 merge_heads


@pytest.mark.task("ch07.2")
@pytest.mark.points(2)
def test_merge_puts_each_head_back_in_its_slice():
    B, H, T, Dh = 2, 3, 3, 3  # H == T: a merge that forgets to move the head axis still runs
    heads = torch.randn(B, H, T, Dh, generator=gen(72))
    got = at.merge_heads(heads)
    expected = torch.cat([heads[:, h] for h in range(H)], dim=-1)  # (B, T, H*Dh)
    assert tuple(got.shape) == (B, T, H * Dh), (
        f"merge_heads of a [2, 3, 3, 3] tensor returned shape {list(got.shape)}, expected [2, 3, 9]"
    )
    assert torch.equal(got, expected), (
        "merge_heads(h)[b, t, i*Dh:(i+1)*Dh] should be h[b, i, t] (head i's output for position t), but the "
        "values come from elsewhere: move the head axis back next to Dh (transpose(1, 2)) before the reshape"
    )


@pytest.mark.task("ch07.2")
def test_merge_undoes_the_correct_split():
    x = torch.randn(2, 5, 12, generator=gen(73))
    heads = x.view(2, 5, 4, 3).transpose(1, 2)  # the correct split, built here
    got = at.merge_heads(heads)
    assert torch.equal(got, x), (
        "merge_heads(x.view(B, T, H, Dh).transpose(1, 2)) should give back x exactly; a merge that is only "
        "the inverse of a wrong split (reshape both ways) round-trips its own mistake but not this"
    )


# ---------------------------------------------------------------- ch07.3 causal_mask


@pytest.mark.task("ch07.3")
@pytest.mark.points(2)
def test_causal_mask_allows_the_past_and_the_present():
    got = at.causal_mask(4)
    assert got.dtype == torch.bool and tuple(got.shape) == (4, 4), (
        f"causal_mask(4) should be a bool [4, 4] tensor, got {got.dtype} {list(got.shape)}"
    )
    expected = [[True, False, False, False], [True, True, False, False]]
    expected += [[True, True, True, False], [True, True, True, True]]
    assert got.tolist() == expected, (
        f"causal_mask(4) returned {got.int().tolist()}; row i is query i and True means 'may attend', as in "
        "F.scaled_dot_product_attention: query i may see keys 0..i (the diagonal included), never i+1.."
    )


@pytest.mark.task("ch07.3")
@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")], ids=["str", "torch.device"])
def test_causal_mask_accepts_a_device(device):
    got = at.causal_mask(3, device=device)
    assert got.device == torch.device(device) and got.dtype == torch.bool, (
        f"causal_mask(3, device={device!r}) returned a {got.dtype} tensor on {got.device}: create the bool mask "
        "directly on the requested device (a string or a torch.device)"
    )


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
    blocked = w.masked_select(~CAUSAL)
    assert torch.all(blocked == 0), (
        f"attention_weights with a causal mask gave future keys weights up to {blocked.abs().max():.3g}; masked "
        "scores must become -inf *before* the softmax so their weight is exactly 0"
    )
    sums = w.sum(-1)
    assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5), (
        f"rows of attention_weights should sum to 1 over the keys, found sums between {sums.min():.4f} and "
        f"{sums.max():.4f}: softmax over the last axis (keys), after masking — not a mask applied after softmax"
    )


@pytest.mark.task("ch07.4")
def test_weights_equal_the_scaled_softmax():
    w = at.attention_weights(Q, K)
    expected = torch.softmax(Q @ K.transpose(-2, -1) / 8**0.5, dim=-1)
    assert torch.allclose(w, expected, atol=1e-5), (
        f"attention_weights(q, k) differs from softmax(q k^T / sqrt(8)) by up to {(w - expected).abs().max():.3g}: "
        "check the 1/sqrt(D) scale (D = q.shape[-1]) and that the softmax runs over keys (the last axis)"
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
    err = (got - ref).abs().max().item()
    assert err < 1e-4, (
        f"attention(q, k, v, mask={'causal' if masked else None}) differs from F.scaled_dot_product_attention by "
        f"{err:.3g}: scores q k^T scaled by 1/sqrt(D), masked to -inf where the mask is False, softmax over keys, "
        "then times v"
    )


# ---------------------------------------------------------------- ch07.6 MultiHeadSelfAttention


def torch_reference(model, n_heads):
    """nn.MultiheadAttention holding the same weights as ``model`` (qkv -> in_proj, proj -> out_proj)."""
    E = model.qkv.in_features
    ref = nn.MultiheadAttention(E, n_heads, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(model.qkv.weight)
        ref.in_proj_bias.copy_(model.qkv.bias)
        ref.out_proj.weight.copy_(model.proj.weight)
        ref.out_proj.bias.copy_(model.proj.bias)
    return ref


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
def test_no_future_position_changes_an_earlier_output():
    torch.manual_seed(7)
    model = at.MultiHeadSelfAttention(16, 4, True)
    x = torch.randn(2, 6, 16, generator=gen(74))
    x2 = x.clone()
    x2[:, 3:] = torch.randn(2, 3, 16, generator=gen(75)) * 5  # change positions 3, 4, 5 only
    with torch.no_grad():
        y, y2 = model(x), model(x2)
    changed = (y[:, :3] != y2[:, :3]).any(-1).any(0).nonzero().flatten().tolist()
    assert not changed, (
        f"MultiHeadSelfAttention(16, 4, causal=True): changing inputs at positions 3-5 changed the outputs at "
        f"positions {changed}; an output may depend only on its own and earlier positions — mask the scores "
        "with the causal mask before the softmax (and keep heads split per position)"
    )


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
def test_weights_of_a_causal_model_are_observable_and_exact():
    torch.manual_seed(8)
    model = at.MultiHeadSelfAttention(12, 3, True)
    with torch.no_grad():
        model(torch.randn(2, 5, 12, generator=gen(76)))
    w = model.last_weights
    assert w is not None and tuple(w.shape) == (2, 3, 5, 5), (
        f"after a forward on [2, 5, 12], MultiHeadSelfAttention(12, 3).last_weights should be [B, H, T, T] = "
        f"[2, 3, 5, 5], got {None if w is None else list(w.shape)}"
    )
    future = torch.ones(5, 5, dtype=torch.bool).triu(1)
    assert torch.all(w[..., future] == 0), (
        "last_weights gives future keys a nonzero weight: masked weights must be exactly 0 (mask before softmax)"
    )
    sums = w.sum(-1)
    assert torch.allclose(sums, torch.ones_like(sums), atol=1e-5), (
        f"each row of last_weights should sum to 1, found {sums.min():.4f}..{sums.max():.4f}"
    )


@pytest.mark.task("ch07.6")
@pytest.mark.points(2)
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_equals_nn_multiheadattention_with_the_same_weights(causal):
    torch.manual_seed(9)
    model = at.MultiHeadSelfAttention(16, 4, causal)
    x = torch.randn(3, 4, 16, generator=gen(77))  # T == H == Dh: a scrambled split still runs
    ref = torch_reference(model, 4)
    mask = ~torch.ones(4, 4, dtype=torch.bool).tril() if causal else None  # nn.MHA: True = blocked
    with torch.no_grad():
        got = model(x)
        expected, _ = ref(x, x, x, attn_mask=mask, need_weights=False)
    err = (got - expected).abs().max().item()
    assert err < 1e-4, (
        f"MultiHeadSelfAttention(16, 4, causal={causal}) differs from nn.MultiheadAttention with the same "
        f"weights by {err:.3g}: check the head split (view + transpose, not reshape), the 1/sqrt(Dh) scale "
        "per head, the mask convention and the merge"
    )
