"""Hidden tests for ch10: other sizes, seeds, data and edge cases than the public ones, and
comparisons with the reference where the contract fixes the answer. Messages state the
violated property, not the test."""

import io
import math
import random

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from exercises.ch10.test_gpt import (  # helpers and probes shared with the public twin
    CROP,
    SLICE,
    TINY,
    attention_input_grads,
    attention_oracle,
    attention_outputs,
    attention_readings,
    attention_with_random_weights,
    batch_of,
    block_outputs,
    cross_entropy,
    decoded,
    generated,
    gpt_forward,
    gpt_structure,
    head_of,
    implied_scale,
    linear_maps,
    logits_with_scaled_embeddings,
    losses_under_global_seeds,
    next_token_batch,
    sampling_problem,
    tokenizer_on,
    training_run,
    unigram_entropy,
    unknown_character_problem,
    window_rule,
    windows,
    xy,
)
from harness import devices, judge
from harness.layouts import LAYOUTS, laid_out
from harness.probe import because, probe
from harness.target import chapter_module, course_file, reference_module

try:  # test bodies only: the student's process of a split run cannot import these
    from harness.evidence import brief, first_difference
    from harness.generated import examples, given, st
except ImportError:
    pass

gpt = chapter_module("ch10", "gpt")
ref = reference_module("ch10", "gpt")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "CANNOT_TELL Recorder TinyLM next_token_batch randomize record_calls"
)


def corpus() -> str:
    return course_file("data/ch10_corpus.txt").read_text(encoding="utf-8")


# ---------------------------------------------------------------- ch10.1


@pytest.mark.task("ch10.1")
def test_tokenizer_on_other_text():
    """The tokenizer round-trips any text (newlines, non-ASCII, the empty string) with sorted ids."""
    text = "Zebra\nab ba, \u00e9t\u00e9 \u20ac5!\n"
    alphabet = "".join(sorted(set(text)))
    seen = tokenizer_on(text, [text, alphabet, ""])
    ids, sorted_ids, empty = seen["encoded"]
    assert seen["vocab_size"] == len(set(text)), (
        "vocab_size must equal the number of distinct characters"
    )
    assert sorted_ids == list(range(len(alphabet))), (
        "ids must follow the sorted order of the distinct characters, so that they are the same "
        "in every process"
    )
    assert decoded(text, ids) == text, (
        "decode(encode(text)) must give back the text, newlines and non-ASCII included"
    )
    assert empty == [] and decoded(text, []) == "", "the empty string must encode to [] and back"
    # ... and "e" with a combining accent beside the precomposed "é": two characters, and one
    for text in (
        "hello world\n",
        "  \tab\r\n",
        " ",
        "\n\nx y\u00a0",
        "\x00a\x1f",
        "cafe\u0301 \u00e9t\u00e9",
    ):
        want = ref.CharTokenizer(text)
        with because(
            f"CharTokenizer({text!r}).encode of its own text raised: the vocabulary must hold "
            "every character of the text as given, whitespace at its ends included (no strip())"
        ):
            seen = tokenizer_on(text, [text])
        assert (seen["vocab_size"], seen["encoded"]) == (want.vocab_size, [want.encode(text)]), (
            f"CharTokenizer({text!r}) gave vocab_size {seen['vocab_size']} and encode(text) "
            f"{seen['encoded'][0] if seen['encoded'] else None}; expected {want.vocab_size} and "
            f"{want.encode(text)}: the vocabulary is every distinct character of the text as "
            "given — spaces, tabs, newlines and control characters at its ends included, and a "
            "combining accent is a character of its own (no strip(), no filtering, no Unicode "
            "normalization)"
        )


@pytest.mark.task("ch10.1")
@examples(16)
@given(
    text=st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=40
    ),
    data=st.data(),
)
def test_tokenizer_matches_the_reference_on_generated_text(text, data):
    """On generated text, vocab_size and encode agree with the sorted-characters vocabulary, encode's ids are Python ints, and decode inverts them, given the ids as a 1-D tensor of any integer dtype (empty included)."""
    query = data.draw(st.text(alphabet=st.sampled_from(sorted(set(text))), max_size=20))
    dtype = data.draw(st.sampled_from(TOKEN_DTYPES), label="dtype")
    want = ref.CharTokenizer(text)
    seen = tokenizer_on(text, [text, query])
    odd = [
        (q, kind)
        for q, kinds in zip([text, query], seen["kinds"])
        for kind in (kinds or [])
        if kind != "builtins.int"
    ]
    assert not odd, (
        f"CharTokenizer({text!r}).encode({odd[0][0]!r}) returned ids of type {odd[0][1]}: "
        "encode returns a list of Python ints. Indexing or arithmetic on numpy values (an "
        "array, np.searchsorted, list(array)) gives numpy integers, which compare equal to "
        "ints but are no int (isinstance(i, int) is False, json refuses them): convert each "
        "id with int(), or an array with .tolist()"
    )
    assert seen["vocab_size"] == want.vocab_size, (
        f"CharTokenizer({text!r}).vocab_size is {seen['vocab_size']}, expected {want.vocab_size}"
    )
    assert seen["encoded"] == [want.encode(text), want.encode(query)], (
        f"CharTokenizer({text!r}).encode differs from ids = index in the sorted distinct "
        f"characters: got {brief(seen['encoded'])}"
    )
    with because(
        f"decode of a 1-D {dtype} tensor of {len(query)} ids raised: convert each id with int()"
    ):
        back = decoded_from(text, want.encode(query), dtype)
    assert back == query, (
        f"CharTokenizer({text!r}).decode(torch.tensor({want.encode(query)}, dtype={dtype})) "
        f"gave {back!r}, expected {query!r}: decode takes a list or a 1-D tensor of ints of "
        "any integer dtype (an empty one too); read each id as int(i)"
    )


@probe
def decoded_from(text, ids, dtype):
    """CharTokenizer(text).decode of ``ids`` as a 1-D tensor of ``dtype``."""
    return gpt.CharTokenizer(text).decode(torch.tensor(ids, dtype=dtype))


@pytest.mark.task("ch10.1")
def test_unknown_characters_raise_wherever_they_would_sort():
    """encode raises (KeyError) for characters outside the vocabulary: before, between or after the known ones."""
    for text, query in (
        ("bdf", "c"),
        ("bdf", "a"),
        ("bdf", "bz"),
        ("hello", "hello world"),
        ("", "x"),
    ):
        problem = unknown_character_problem(text, query)
        assert problem is None, (
            f"CharTokenizer({text!r}).encode({query!r}) {problem}: a character outside the "
            "vocabulary must raise, not be mapped to some id or dropped"
        )


# ---------------------------------------------------------------- ch10.2


@probe
def on_meta(part):
    """``part`` run entirely on the "meta" device (shapes and dtypes, no data: what a CUDA
    run would place, without a GPU): (device, shape, dtype) of each tensor it returns, or
    what it raised."""
    meta = torch.device("meta")
    ids = torch.zeros(2, 5, dtype=torch.long, device=meta)
    x = torch.empty(2, 5, 8, device=meta)
    calls = {  # modules are built on the CPU and moved; only the call itself is watched
        "get_batch": lambda: (
            gpt.get_batch,
            (
                torch.zeros(50, dtype=torch.long, device=meta),
                6,
                3,
                torch.Generator().manual_seed(0),
            ),
        ),
        "attention": lambda: (gpt.CausalSelfAttention(8, 2, 6).to(meta), (x,)),
        "block": lambda: (gpt.Block(8, 2, 6).to(meta), (x,)),
        "gpt": lambda: (gpt.GPT(11, 8, 2, 2, 6).to(meta), (ids, ids)),
    }
    call, args = calls[part]()
    outcome, out = devices.on_meta(call, *args)
    out = (out,) if isinstance(out, torch.Tensor) else out
    if outcome == devices.NEEDS_VALUES:
        return CANNOT_TELL  # it reads values: right on a GPU, impossible on meta
    if outcome != "returned":
        return f"{outcome}: {out}"  # raised, or mixed devices (the op that met both)
    return [
        (str(t.device), tuple(t.shape), str(t.dtype)) if isinstance(t, torch.Tensor) else repr(t)
        for t in out
    ]


CANNOT_TELL = "reads values: no verdict on meta"
META_CALLS = {
    "get_batch": (
        "get_batch(int64 data of 50 tokens on 'meta', 6, 3)",
        [("meta", (3, 6), "torch.int64")] * 2,
    ),
    "attention": (
        "CausalSelfAttention(8, 2, 6).to('meta') on (2, 5, 8)",
        [("meta", (2, 5, 8), "torch.float32")],
    ),
    "block": ("Block(8, 2, 6).to('meta') on (2, 5, 8)", [("meta", (2, 5, 8), "torch.float32")]),
    "gpt": (
        "GPT(11, 8, 2, 2, 6).to('meta') on idx = targets of shape (2, 5)",
        [("meta", (2, 5, 11), "torch.float32"), ("meta", (), "torch.float32")],
    ),
}


def assert_stays_on_the_device(part):
    """``part`` on the "meta" device returns tensors there, of the right shape and dtype."""
    call, want = META_CALLS[part]
    seen = on_meta(part)
    if seen == CANNOT_TELL:
        return
    assert seen == want, (
        f"{call} gave {seen}; expected {want}. Whatever device the data or the module's "
        "parameters live on (here 'meta', as on a GPU), every tensor made along the way must "
        "be made there too: a mask or position index built in forward takes x.device (or is a "
        "registered buffer, which .to() moves), and nothing is copied to the CPU"
    )


@pytest.mark.task("ch10.2")
def test_targets_follow_inputs_in_arbitrary_data():
    """On data in no particular order, every target is the token that follows its input in the data."""
    gen = torch.Generator().manual_seed(11)
    data = torch.randperm(300, generator=gen)  # distinct tokens in no particular order
    successor = {int(a): int(b) for a, b in zip(data[:-1], data[1:])}
    x, y = xy(batch_of(data, 10, 7, 2))
    assert x.shape == y.shape == (7, 10), "x and y must both be (batch_size, block_size)"
    ok = all(successor.get(int(a)) == int(b) for a, b in zip(x.flatten(), y.flatten()))
    assert ok, (
        "some target is not the token that follows its input in the data: y must be x shifted by one"
    )
    assert_stays_on_the_device("get_batch")


@pytest.mark.task("ch10.2")
def test_every_window_can_be_drawn_and_none_runs_past_the_end():
    """Window starts cover 0 .. len(data) - block_size - 1; with block_size + 1 tokens there is exactly one window."""
    data = torch.arange(9) * 3
    x, y = xy(batch_of(data, 8, 5, 0))
    one = judge.is_equal(x, data[:8].repeat(5, 1)) and judge.is_equal(y, data[1:9].repeat(5, 1))
    assert one, (
        "when data holds exactly block_size + 1 tokens there is one window: x = data[:-1], y = data[1:]"
    )
    data = torch.arange(20)
    x, y = xy(batch_of(data, 4, 3000, 0))
    shifted = judge.is_equal(y, x + 1)
    assert shifted, "targets must be the next tokens"
    assert int(x[:, 0].min()) == 0 and int(y[:, -1].max()) == 19, (
        "over many draws, windows never start at the first token or never reach the last token: "
        "every start 0 .. len(data) - block_size - 1 must be possible"
    )


@probe
def batches_from_one_generator(data, block_size, batch_size, seed, calls):
    """get_batch ``calls`` times with one generator seeded with seed, which the caller drew
    from once first: each (x, y)."""
    g = torch.Generator().manual_seed(seed)
    torch.rand(1, generator=g)
    return [gpt.get_batch(data, block_size, batch_size, g) for _ in range(calls)]


@pytest.mark.task("ch10.2")
@examples(20)
@given(
    n=st.integers(1, 60),
    block=st.integers(1, 12),
    batch=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from([torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]),
)
def test_get_batch_matches_the_reference_draw(n, block, batch, seed, dtype):
    """With the same generator seed, get_batch draws the reference's windows (torch.randint over the starts, one possible start included) and shifts y by one, as int64 whatever integer type the tokens are kept in; successive calls continue the generator from where it stands."""
    length = n + block  # n possible window starts
    data = torch.randperm(length, generator=torch.Generator().manual_seed(seed)).to(dtype)
    with because(
        f"get_batch(data of {length} {dtype} tokens, block_size={block}, batch_size={batch}) "
        "raised: the starts 0 .. len(data) - block_size - 1 are all windows (exactly one when "
        "data holds block_size + 1 tokens), and the tokens may be kept in any integer dtype"
    ):
        x, y = xy(batch_of(data, block, batch, seed))
    assert x.dtype == y.dtype == torch.int64, (
        f"get_batch on {dtype} token ids returned x {x.dtype} and y {y.dtype}: both must be "
        "int64 (its docstring), as F.cross_entropy and nn.Embedding want them; convert the "
        "windows with .long()"
    )
    want_x, want_y = ref.get_batch(data, block, batch, torch.Generator().manual_seed(seed))
    same = judge.is_equal(x, want_x) and judge.is_equal(y, want_y)
    assert same, (
        f"get_batch(data of {length} tokens, block_size={block}, batch_size={batch}) with a "
        f"generator seeded {seed} gave x {first_difference(x, want_x)}; y "
        f"{first_difference(y, want_y)}: draw starts with torch.randint(len(data) - block_size, "
        "(batch_size,), generator=generator), x = data[i : i+T], y = data[i+1 : i+T+1]"
    )
    g = torch.Generator().manual_seed(seed)
    torch.rand(1, generator=g)
    for k, (got, want) in enumerate(
        zip(
            batches_from_one_generator(data, block, batch, seed, 2),
            [ref.get_batch(data, block, batch, g) for _ in range(2)],
        )
    ):
        same = all(judge.is_equal(a, b) for a, b in zip(xy(got), want))
        assert same, (
            f"get_batch call {k + 1} of 2 with one generator (seeded {seed}, drawn from once "
            f"by the caller) gave x {first_difference(got[0], want[0])}: draw from the "
            "generator as it stands, so each call continues its stream — a clone of it, or a "
            "generator re-seeded with generator.initial_seed(), repeats the same windows and "
            "leaves the caller's generator where it was"
        )


@probe
def batches_without_a_generator(seed):
    """Two get_batch(arange(50), 4, 6) calls without a generator after torch.manual_seed(seed),
    then the same two calls after reseeding: their (x, y) pairs."""
    data = torch.arange(50)
    torch.manual_seed(seed)
    first = [gpt.get_batch(data, 4, 6) for _ in range(2)]
    torch.manual_seed(seed)
    again = [gpt.get_batch(data, 4, 6) for _ in range(2)]
    return first, again


@pytest.mark.task("ch10.2")
def test_get_batch_without_a_generator_draws_from_the_global_one():
    """Without a generator, get_batch draws from torch's global generator: successive calls differ, and torch.manual_seed repeats them."""
    first, again = batches_without_a_generator(3)
    for x, y in first:
        assert judge.is_equal(y, x + 1), (
            "get_batch(arange(50), 4, 6) without a generator: y must be x shifted one token "
            f"into the future ({first_difference(y, x + 1)})"
        )
    first, again = [x for x, _ in first], [x for x, _ in again]
    assert all(judge.is_equal(a, b) for a, b in zip(first, again)), (
        "get_batch(data, 4, 6) without a generator gave other windows after the same "
        "torch.manual_seed: with generator=None, draw from torch's global generator"
    )
    assert judge.differ(first[0].float(), first[1].float(), atol=0, rtol=0), (
        "two successive get_batch calls without a generator gave the same windows: a fresh "
        "torch.Generator() starts from the same default seed every time, so every batch of a "
        "run would repeat; with generator=None, draw from the global generator"
    )


# ---------------------------------------------------------------- ch10.3


def windows_at(data, starts, T, shifts):
    return torch.stack([data[i + s : i + s + T] for i, s in zip(starts, shifts)])


# (B, T, s, where y is wrong): one row or many, short and long rows (a share of agreeing
# positions is then close to 1), every end of the overlap and a position past it
ONE_OFF = [
    (1, 2, 1, "first"),
    (1, 2, 1, "outside"),
    (1, 41, 1, "first"),
    (1, 41, -1, "last"),
    (1, 41, 2, "inside"),
    (1, 41, 1, "outside"),
    (8, 64, 1, "inside"),
    (8, 64, 0, "inside"),
    (8, 64, -1, "first"),
    (48, 12, 1, "last"),
    (48, 12, 2, "inside"),
    (48, 12, -1, "outside"),
]


def one_target_off():
    """(x, y, where) of batches of distinct tokens whose y is x shifted by s except at one
    position of one (random) row: the first, last or a random position where x[:, t+s]
    exists (set to x[b, t], or to a token the data never holds when s == 0), or one past
    that overlap, where y has no partner in x."""
    rng = random.Random(16)
    data = torch.randperm(5000, generator=torch.Generator().manual_seed(16))
    out = []
    for B, T, s, which in ONE_OFF:
        starts = [rng.randrange(4, 4900) for _ in range(B)]
        x = windows_at(data, starts, T, [0] * B)
        y = windows_at(data, starts, T, [s] * B)
        lo, hi = max(0, -s), min(T, T - s)  # y[:, t] has a partner x[:, t+s] for lo <= t < hi
        t = {"first": lo, "last": hi - 1, "inside": rng.randrange(lo, hi)}.get(which)
        t = (hi if s > 0 else lo - 1) if t is None else t
        b = rng.randrange(B)
        y[b, t] = x[b, t] if s else 5000 + t
        side = "outside" if which == "outside" else "inside"
        out.append((x, y, f"y[{b}, {t}] (s = {s}, {side} the overlap)"))
    return out


@pytest.mark.task("ch10.3")
def test_check_targets_on_past_mixed_and_unrelated_targets():
    """Past targets give shift -1; a batch with one misaligned row (anywhere), one wrong target at any position, or unrelated targets gives shift None."""
    data = torch.arange(1000)
    starts = [5, 300, 41, 700]
    x = windows_at(data, starts, 16, [0] * 4)
    r = gpt.check_targets(x, windows_at(data, starts, 16, [-1] * 4))
    assert (r.ok, r.shift) == (False, -1), (
        "targets equal to the previous token must give ok=False, shift=-1"
    )
    for row in (1, 2):  # the public test moves rows 0, 3 and 4 of five
        shifts = [1] * 4
        shifts[row] = 0
        r = gpt.check_targets(x, windows_at(data, starts, 16, shifts))
        assert not r.ok and r.shift is None, (
            f"when row {row} of the batch is not shifted the batch is not a next-token batch: "
            f"every row must agree (got ok={r.ok}, shift={r.shift})"
        )
    gen = torch.Generator().manual_seed(0)
    r = gpt.check_targets(x, torch.randint(1000, x.shape, generator=gen))
    assert not r.ok and r.shift is None, "unrelated targets must give ok=False, shift=None"
    cases = one_target_off()
    seen = target_checks([(x, y) for x, y, _ in cases])
    for (x, y, where), got in zip(cases, seen):
        want = ref.check_targets(x, y)
        assert got == {"ok": want.ok, "shift": want.shift}, (
            f"check_targets on a {tuple(x.shape)} batch whose y[:, t] == x[:, t+s] holds "
            f"everywhere except {where} gave {got}; expected ok={want.ok}, "
            f"shift={want.shift}. An offset fits only where every position at which both "
            "x[:, t+s] and y[:, t] exist agrees, in every row: one wrong target is a broken "
            "batch (no share or count of agreeing positions is enough), and a position with "
            "no partner in x is not compared"
        )


@pytest.mark.task("ch10.3")
def test_check_targets_on_short_windows_real_text_and_the_reach():
    """Shifts are found in windows of 2 and of real text; offsets with |s| >= max(2, T/2) are not tried."""
    r = gpt.check_targets(torch.tensor([[3, 9], [4, 2]]), torch.tensor([[9, 7], [2, 2]]))
    assert r.ok and r.shift == 1, "a correct next-token batch with block_size 2 must be recognised"
    alternating = torch.tensor([[0, 1, 0, 1, 0, 1], [5, 6, 5, 6, 5, 6]])
    for x, y in (
        (alternating, alternating.roll(-1, 1)),
        (torch.tensor([[3, 9]]), torch.tensor([[9, 3]])),
    ):
        r = gpt.check_targets(x, y)
        assert r.ok and r.shift == 1, (
            f"x={x.tolist()}, y={y.tolist()}: y is x shifted by +1 and also by -1; on such a tie "
            f"the next-token reading wins (+s before -s), so ok=True, shift=1 (got ok={r.ok}, "
            f"shift={r.shift})"
        )
    for T in (4, 6, 9):
        for s in (1, 2, -1, 0):
            for period in (1, 2, 3):
                # row 0 repeats with `period`, so it fits several shifts; row 1 fits s only
                seq = torch.tensor([5, 7, 2][:period] * 30)
                x = torch.stack([seq[6 : 6 + T], torch.arange(20, 20 + T)])
                y = torch.stack([seq[6 + s : 6 + s + T], torch.arange(20 + s, 20 + s + T)])
                want = ref.check_targets(x, y)
                r = gpt.check_targets(x, y)
                assert (r.ok, r.shift) == (want.ok, want.shift), (
                    f"check_targets(x={x.tolist()}, y={y.tolist()}) said ok={r.ok}, "
                    f"shift={r.shift}; expected ok={want.ok}, shift={want.shift}. Row 0 repeats "
                    f"every {period} token(s), so it fits several shifts: the answer is the one "
                    "s (smallest |s|, +s first) that holds in every row at once — try each s on "
                    "the whole batch, not each row's own smallest shift"
                )
    data = torch.tensor([ord(c) for c in corpus()])
    starts = [10, 1000, 5000, 9000, 12000]
    x = windows_at(data, starts, 40, [0] * 5)
    for s in (1, 0, 3, -2):
        r = gpt.check_targets(x, windows_at(data, starts, 40, [s] * 5))
        assert (r.ok, r.shift) == (s == 1, s), (
            f"on windows of real text with y[:, t] == x[:, t{s:+d}] check_targets said ok={r.ok}, "
            f"shift={r.shift}: the reported shift must be the offset between x and y"
        )
    data = torch.arange(100)
    for T, s, want in ((9, 4, 4), (8, 4, None), (8, -3, -3), (3, 1, 1), (3, 2, None)):
        x = windows_at(data, [10, 50], T, [0, 0])
        r = gpt.check_targets(x, windows_at(data, [10, 50], T, [s, s]))
        assert r.shift == want, (
            f"T = {T}, y shifted by {s}: check_targets said shift={r.shift}, expected {want} — "
            f"offsets |s| < max(2, T/2) = {max(2, T / 2)} are tried, larger ones are not"
        )


def accepted_checks(x, want):
    """The (ok, shift) answers of check_targets on x the contract allows, given the
    reference's ``want``: that one; with one token per row and no s = 0, also (True, 1),
    since s = +1 leaves no t where both exist and "wherever both exist" then holds
    vacuously."""
    accepted = {(want.ok, want.shift)}
    if x.dim() == 2 and x.shape[1] == 1 and want.shift is None:
        accepted.add((True, 1))
    return accepted


@pytest.mark.task("ch10.3")
@examples(40)
@given(
    B=st.integers(1, 4),
    T=st.integers(1, 20),
    data=st.data(),
)
def test_check_targets_matches_the_reference(B, T, data):
    """On generated batches (any size, any offset, some rows misaligned) ok and shift agree with the reference."""
    s = data.draw(st.integers(-T + 1, T - 1), label="shift")
    bad = data.draw(st.one_of(st.none(), st.tuples(st.integers(0, B - 1), st.integers(-T, T))))
    seed = data.draw(st.integers(0, 1000), label="seed")
    tokens = torch.randperm(200, generator=torch.Generator().manual_seed(seed))
    starts = torch.randint(25, 150, (B,), generator=torch.Generator().manual_seed(seed)).tolist()
    shifts = [s] * B
    if bad is not None:
        shifts[bad[0]] = bad[1]
    x = windows_at(tokens, starts, T, [0] * B)
    y = windows_at(tokens, starts, T, shifts)
    want = ref.check_targets(x, y)
    got = gpt.check_targets(x, y)
    assert (got.ok, got.shift) in accepted_checks(x, want), (
        f"check_targets on a (B={B}, T={T}) batch with row shifts {shifts} said ok={got.ok}, "
        f"shift={got.shift}; expected ok={want.ok}, shift={want.shift} (the smallest |s| < "
        "max(2, T/2) with y[:, t] == x[:, t+s] in every row wherever both exist)"
    )


@probe
def target_checks(pairs):
    """check_targets(x, y) on each pair: {"ok": ..., "shift": ...} or what it raised."""
    out = []
    for x, y in pairs:
        try:
            r = gpt.check_targets(x, y)
            out.append({"ok": r.ok, "shift": r.shift})
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            out.append({"raised": f"{type(exc).__name__}: {str(exc)[:200]}"})
    return out


TOKEN_DTYPES = [torch.int64, torch.int32, torch.int16, torch.uint8]
ROW_VOCABS = [1, 2, 3, 200]  # constant rows, short periods by chance, and distinct tokens


def few_token_batch():
    """(B, T, vocab pick, dtype pick, row shifts, seed) of one batch (see few_token_windows)."""
    return st.tuples(
        st.integers(1, 6),
        st.integers(1, 24),
        st.integers(0, 3),
        st.integers(0, 3),
        st.one_of(st.integers(-3, 3), st.lists(st.integers(-3, 3), min_size=6, max_size=6)),
        st.integers(0, 2**16),
    )


def few_token_windows(case, k):
    """x, y (B, T) of the k-th drawn ``case``: row b a window of its own random sequence over
    ROW_VOCABS[vocab + b] values (a batch mixes constant, periodic and distinct rows), y the
    same sequence shifted by that row's shift. k moves sizes, vocabularies and dtypes along
    so that even the simplest draw visits every one."""
    B, T, vocab, dtype, shifts, seed = case
    B, T = 1 + (B - 1 + k) % 6, 1 + (T - 1 + 5 * k) % 24
    shifts = [shifts] * B if isinstance(shifts, int) else shifts[:B]
    g = torch.Generator().manual_seed(seed + k)
    rows = []
    for b in range(B):
        seq = torch.randint(ROW_VOCABS[(vocab + k + b) % 4], (T + 8,), generator=g)
        rows.append((seq[4 : 4 + T], seq[4 + shifts[b] : 4 + shifts[b] + T]))
    x, y = torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows])
    return x.to(TOKEN_DTYPES[(dtype + k) % 4]), y.to(TOKEN_DTYPES[(dtype + k) % 4])


def periodic_windows(case, k, sign):
    """x, y (B, T) of the k-th drawn ``case`` whose rows all repeat with one period P (1 to 6,
    moved along by k; a row's own pattern over ROW_VOCABS[vocab + b] values may repeat
    sooner) and T >= 2P - 1, y row b's sequence shifted by ``sign`` times the drawn shift,
    plus P where that row's drawn shift is odd: every offset that differs from the shift by a
    multiple of P fits every row, so a past offset and a larger future one (-1 and +3 at
    P = 4) fit at once."""
    B, T, vocab, dtype, shifts, seed = case
    B, P = 1 + (B + k) % 6, 1 + (seed + k) % 6
    T = 2 * P - 1 + (T + 3 * k) % (26 - 2 * P)
    shifts = [shifts] * B if isinstance(shifts, int) else shifts[:B]
    shifts = [sign * shifts[0] + P * (s % 2) for s in shifts]
    g = torch.Generator().manual_seed(seed + 7 * k + sign)
    rows = []
    for b in range(B):
        pattern = torch.randint(ROW_VOCABS[(vocab + k + b) % 4], (P,), generator=g)
        seq = pattern.repeat((T + 20 + P - 1) // P)
        rows.append((seq[10 : 10 + T], seq[10 + shifts[b] : 10 + shifts[b] + T]))
    x, y = torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows])
    return x.to(TOKEN_DTYPES[(dtype + k) % 4]), y.to(TOKEN_DTYPES[(dtype + k) % 4])


@pytest.mark.task("ch10.3")
@examples(3)
@given(cases=st.lists(few_token_batch(), min_size=12, max_size=12))
def test_check_targets_where_several_shifts_fit(cases):
    """On batches over one to three token values (constant rows, periods, ties between +s and
    -s) and batches whose rows repeat with a period of 1 to 6 (a past offset and a larger
    future one both fit), of one row or many, T from 1, in int64, int32, int16 and uint8, ok
    and shift agree with the reference."""
    pairs = [few_token_windows(case, k) for k, case in enumerate(cases)]
    pairs += [periodic_windows(c, k, sign) for k, c in enumerate(cases) for sign in (1, -1)]
    seen = target_checks(pairs)
    bad = []
    for (x, y), got in zip(pairs, seen):
        want = ref.check_targets(x, y)
        if "raised" in got or (got["ok"], got["shift"]) not in accepted_checks(x, want):
            bad.append((x.numel(), x, y, got, want))
    if bad:
        _, x, y, got, want = min(bad, key=lambda b: b[0])
        what = (
            f"raised {got['raised']}"
            if "raised" in got
            else f"said ok={got['ok']}, shift={got['shift']}"
        )
        raise AssertionError(
            f"check_targets(x={x.tolist()}, y={y.tolist()}) ({x.dtype}) {what}; expected "
            f"ok={want.ok}, shift={want.shift} ({len(bad)} of {len(pairs)} drawn batches wrong; "
            "the smallest shown). With few token values or rows that repeat several offsets "
            "fit: try s in the order 0, +1, -1, +2, -2, ... (|s| < max(2, T/2)) on the whole "
            "batch at once and report the first that holds in every row; 0 comes before 1, a "
            "past offset before any future one of larger |s| (-1 before +3), and the token "
            "ids may be any integer dtype"
        )


# ---------------------------------------------------------------- ch10.4


@probe
def forward_in_layout(kind, cfg, seed, tensors, layout):
    """The module ``kind`` ("attention", "block" or "gpt") built from ``cfg`` after
    torch.manual_seed(seed), in eval mode, called without grad on ``tensors``, each rebuilt
    with the same values in ``layout`` (harness.layouts)."""
    build = {"attention": gpt.CausalSelfAttention, "block": gpt.Block, "gpt": gpt.GPT}[kind]
    torch.manual_seed(seed)
    module = build(*cfg).eval()
    with torch.no_grad():
        return module(*[laid_out(t, layout) for t in tensors])


def check_layouts(kind, cfg, tensors, what):
    """Call ``kind`` on ``tensors`` in every layout: each result equals the contiguous one."""
    results = {}
    for layout in LAYOUTS:
        with because(f"{what} raised on inputs laid out {layout} in memory"):
            results[layout] = forward_in_layout(kind, cfg, 7, tensors, layout)
    want = results["contiguous"]
    out = want[0] if kind == "gpt" else want
    size = tuple(tensors[0].shape) if kind != "gpt" else tuple(tensors[0].shape[:2])
    ok = isinstance(out, torch.Tensor) and tuple(out.shape)[: len(size)] == size
    assert ok, (
        f"{what} returned {brief(out)} for contiguous inputs: expected a tensor whose shape "
        f"starts with the input's {size} (the layout comparison needs a real output)"
    )
    judge.all_finite(out, f"{what} on contiguous inputs")
    for layout, got in results.items():
        pairs = zip(got, want) if kind == "gpt" else [(got, want)]
        for k, (a, b) in enumerate(pairs):
            judge.close(
                a,
                b,
                f"{what}{' ' + ('logits', 'loss')[k] if kind == 'gpt' else ''} on inputs whose "
                f"values are the same but which are laid out {layout} in memory (a transposed, "
                "strided or offset view) differ from the contiguous inputs' result: a module "
                "reads its input by shape, never by memory order (.view on a non-contiguous "
                "input, or data_ptr arithmetic); use reshape where the layout is not yours",
                atol=1e-5,
                rtol=1e-5,
            )


@probe
def attention_outputs_at_scale(n_embd, n_head, block_size, seed, scales, xs):
    """A CausalSelfAttention built after torch.manual_seed(seed), in eval mode, with every
    trainable parameter overwritten by scale * randn (seeded): its outputs on each x, without
    grad, for each scale."""
    torch.manual_seed(seed)
    m = gpt.CausalSelfAttention(n_embd, n_head, block_size).eval()
    g = torch.Generator().manual_seed(seed)
    base = [torch.randn(p.shape, generator=g) for p in m.parameters()]
    outs = []
    with torch.no_grad():
        for scale in scales:
            for p, b in zip(m.parameters(), base):
                if p.requires_grad and p.is_floating_point():
                    p.copy_(scale * b)
            outs.append([m(x) for x in xs])
    return outs


# parameter scales: scores grow as scale**2, so every allowed score of a row whose best one is
# negative sinks below any finite fill (-1e4, -1e9, -1e30) while -inf stays below them all
CAUSAL_SCALES = [1.0, 1e2, 1e3, 1e5, 1e8, 1e12, 1e16]
CAUSAL_SIZES = [(4, 1, 6), (8, 2, 8), (12, 3, 5), (16, 4, 12), (6, 6, 7), (9, 3, 3)]


def assert_causal_at_every_scale():
    """Outputs before a cut do not move when every input from the cut on is redrawn, with the
    layer's weights scaled so far that its scores lie far below any finite fill value."""
    rng = random.Random(10)
    for C, H, block in CAUSAL_SIZES:
        T = rng.randint(2, block)
        cut = rng.randint(1, T - 1)
        g = torch.Generator().manual_seed(C * 100 + H)
        x = torch.randn(3, T, C, generator=g)
        x2 = x.clone()
        x2[:, cut:] = 3 * torch.randn(3, T - cut, C, generator=g)
        what = f"CausalSelfAttention({C}, {H}, {block}) on x[3, {T}, {C}]"
        with because(f"{what} with its parameters scaled up raised"):
            outs = attention_outputs_at_scale(C, H, block, C + H, CAUSAL_SCALES, [x, x2])
        for scale, (out, out2) in zip(CAUSAL_SCALES, outs):
            at = f"{what}, every parameter scale * randn with scale {scale:g}"
            judge.answer(out, (3, T, C), at, bound=1e37)
            size = out[:, :cut].abs().max().item()
            judge.close(
                out2[:, :cut],
                out[:, :cut],
                f"{at}: redrawing the inputs at positions {cut}..{T - 1} moved the outputs at "
                f"positions 0..{cut - 1}, so position t saw later positions. With large weights "
                "every allowed score of a row can lie far below a finite fill value (scores grow "
                "as the square of the weights), and then the masked future gets the weight: look "
                "at the value the masked scores are given before the softmax — only -inf is below "
                "every score",
                atol=1e-5 * size + 1e-6,
                rtol=1e-5,
            )


@pytest.mark.task("ch10.4")
def test_attention_gradient_is_causal_everywhere():
    """The gradient of every output position reaches position 0 and no later position; one
    head and one position work; with weights of any scale (scores far below any finite fill
    value) no output moves when later inputs change."""
    grads = attention_input_grads(16, 4, 16, 4, torch.randn(1, 16, 16), list(range(16)))
    for t, g in enumerate(grads):
        if t < 15:
            assert g[0, t + 1 :].abs().max().item() == 0.0, (
                f"output position {t} receives gradient from a later input position: attention leaks the future"
            )
        assert g[0, 0].abs().max().item() > 0, (
            f"output position {t} ignores the first input position"
        )
    with because(f"CausalSelfAttention(8, 1, 8) on one position raised {SLICE}"):
        (one,) = attention_outputs(8, 1, 8, 0, [torch.randn(2, 1, 8)])
    assert one.shape == (2, 1, 8), "a single head and a single position must work"
    assert_causal_at_every_scale()


@pytest.mark.task("ch10.4")
def test_attention_keeps_batch_rows_apart():
    """Changing one sequence of the batch never changes another's output; the same input values give the same output whatever their memory layout (transposed, strided, offset)."""
    x = torch.randn(3, 12, 12)
    x2 = x.clone()
    x2[1:] = torch.randn(2, 12, 12)
    out, out2 = attention_outputs(12, 3, 12, 5, [x, x2])
    gap = (out[0] - out2[0]).abs().max().item()
    assert gap < 1e-5, (
        "changing one sequence of the batch changes another: attention must mix positions, never batch rows"
    )
    x = torch.randn(2, 6, 12, generator=torch.Generator().manual_seed(3))
    check_layouts("attention", (12, 3, 8), [x], "CausalSelfAttention(12, 3, 8) on (2, 6, 12)")
    assert_stays_on_the_device("attention")


@probe
def attention_in_dtype(n_embd, n_head, block_size, seed, x, dtype):
    """CausalSelfAttention(n_embd, n_head, block_size) built after torch.manual_seed(seed), in
    eval mode, converted with .to(torch.<dtype>), every trainable parameter overwritten with
    0.3 * randn (seeded, drawn in float64), then its output on x: (named parameters, output)."""
    torch.manual_seed(seed)
    m = gpt.CausalSelfAttention(n_embd, n_head, block_size).eval().to(getattr(torch, dtype))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            if p.requires_grad and p.is_floating_point():
                p.copy_(0.3 * torch.randn(p.shape, generator=g, dtype=torch.float64))
        out = m(x)
    return [(n, p.detach().clone()) for n, p in m.named_parameters()], out


@pytest.mark.task("ch10.4")
@pytest.mark.parametrize(
    "C, H, T, dtype",
    [(30, 5, 7, "float32"), (8, 1, 8, "float64"), (32, 8, 4, "float32"), (36, 3, 12, "float64")],
)
def test_attention_scale_on_other_head_sizes(C, H, T, dtype):
    """Scores are scaled by 1/sqrt(n_embd / n_head), whatever the number of heads (1 head
    included); a float64 module computes its attention in float64, to float64 precision."""
    x = torch.randn(
        2, T, C, generator=torch.Generator().manual_seed(C), dtype=getattr(torch, dtype)
    )
    what = f"CausalSelfAttention({C}, {H}, block_size=12).to(torch.{dtype}) on x[2, {T}, {C}]"
    with because(f"{what} raised {SLICE}"):
        params, out = attention_in_dtype(C, H, 12, 1, x, dtype)
    judge.answer(out, (2, T, C), what)
    s = implied_scale(x, out, params, C, H)
    right = 1 / math.sqrt(C // H)
    assert s is None or abs(s / right - 1) < 1e-3, (
        f"CausalSelfAttention({C}, {H}) scales its scores by {s:.4g}, expected 1/sqrt({C // H}) = {right:.4g}"
    )
    maps = linear_maps(params) if dtype == "float64" else None
    if maps is None:  # float32 (rounding hides nothing more), or parameters not read as Linears
        return
    # the closest reading of the parameters as q, k, v, out projections, computed in float64
    # by PyTorch's attention: the module must match it to float64 rounding
    want = min(
        (attention_oracle(x, r, H, right) for r in attention_readings(maps, C, H)),
        key=lambda w: (w - out).abs().max().item() if w.shape == out.shape else math.inf,
        default=None,
    )
    if want is None:
        return
    judge.close(
        out,
        want,
        f"{what}: the output differs from float64 attention with the module's own projections "
        "by more than float64 rounding (or is not float64). Dtypes are free: a float64 module "
        "keeps every intermediate in float64 — look for a step that goes through float32 (a "
        "softmax taken in float32 and cast back, a buffer or accumulator made with the default "
        "dtype, a tensor built without dtype=x.dtype)",
        atol=1e-12 * (1 + want.abs().max().item()),
        rtol=1e-10,
    )


@pytest.mark.task("ch10.4")
@pytest.mark.parametrize("C, H", [(12, 3), (16, 4), (8, 2), (10, 1)])
def test_attention_splits_n_head_separate_heads(C, H):
    """Every one of the n_head heads attends with its own softmax: as one earlier input moves along a line, the next output moves within exactly 2 * n_head directions."""
    g = torch.Generator().manual_seed(C + H)
    first, second, direction = (torch.randn(1, 1, C, generator=g) for _ in range(3))
    steps = torch.linspace(-3.0, 3.0, 40)[:, None, None]
    x = torch.cat([first.expand(40, 1, C), second + steps * direction], dim=1)  # (40, 2, C)
    with because(f"CausalSelfAttention({C}, {H}, block_size=8) raised {SLICE}"):
        _, out = attention_with_random_weights(C, H, 8, 3, x)
    # position 0 sees only itself; position 1 mixes both with one softmax weight per head,
    # so out[:, 1] - out[:, 0] = sum over heads of (1 - a_h) * (a line through head h's space)
    spread = torch.linalg.svdvals((out[:, 1] - out[:, 0]).double())
    rank = int((spread > 1e-5 * spread[0]).sum())  # float32 noise: ~1e-7
    assert rank == 2 * H, (
        f"CausalSelfAttention({C}, {H}): with input 0 fixed and input 1 moving along a line, "
        f"output 1 minus output 0 spans {rank} directions; {H} heads, each with its own "
        f"softmax over its own q . k of size {C // H}, span exactly {2 * H} (two per head)"
        + (
            ": the heads are not split — one softmax over all n_embd channels is a single head; "
            "view q, k, v as (B, T, n_head, n_embd // n_head) and transpose before the scores"
            if rank == 2 and H > 1
            else ": split q, k and v into n_head heads of size n_embd // n_head"
        )
    )


# ---------------------------------------------------------------- ch10.5


@probe
def block_input_grad(n_embd, n_head, block_size, seed, x, t):
    """d(sum of Block output[:, t]) / d(input), and the Block's output on a prefix of x and on x."""
    torch.manual_seed(seed)
    blk = gpt.Block(n_embd, n_head, block_size).eval()
    x = x.clone().requires_grad_(True)
    out = blk(x)
    (g,) = torch.autograd.grad(out[:, t].sum(), x)
    with torch.no_grad():
        prefix = blk(x[:, : t + 3])
    return g, prefix, out.detach()


@pytest.mark.task("ch10.5")
def test_block_gradient_is_causal_and_prefix_stable():
    """A Block's output at t gets gradient from positions <= t only, and a prefix gives the prefix of the output."""
    with because(f"Block(12, 3, 12) raised {SLICE}"):
        g, prefix, out = block_input_grad(12, 3, 12, 6, torch.randn(2, 12, 12), 4)
    assert g[:, 5:].abs().max().item() == 0.0, (
        "a Block output position receives gradient from later positions"
    )
    assert g[:, :4].abs().max().item() > 0, "a Block output position ignores earlier positions"
    judge.close(
        prefix,
        out[:, :7],
        "a Block applied to a prefix must give the prefix of its output on the full sequence",
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.task("ch10.5")
def test_block_reads_its_input_in_any_memory_layout():
    """A Block gives the same output for the same input values whatever their memory layout (transposed, strided, offset)."""
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(4))
    check_layouts("block", (8, 2, 8), [x], "Block(8, 2, 8) on (2, 5, 8)")
    assert_stays_on_the_device("block")


@pytest.mark.task("ch10.5")
def test_block_residual_stream_carries_its_input_at_other_sizes():
    """Adding any per-position constant to a Block's input adds it to the output (pre-norm, residual paths)."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(3, 7, 24, generator=gen)
    c = 5.0 * torch.randn(3, 7, 1, generator=gen)
    out, moved, big = block_outputs(24, 3, 7, 2, [x, x + c, x - 40.0])
    gap = max((moved - (out + c)).abs().max().item(), (big - (out - 40.0)).abs().max().item())
    assert gap < 2e-3, (
        "adding a constant to every channel at a position must add the same constant to the "
        "Block's output there: each branch reads a LayerNorm of the stream and the residual path "
        f"carries the input untouched — pre-norm, no LayerNorm after the additions (max deviation {gap:.2e})"
    )
    assert (out - x).abs().max().item() > 1e-3, "the Block's branches add nothing to the stream"


def randomize(module, seed):
    """Every trainable parameter of module set to 0.3 * randn (seeded), so that no two
    LayerNorms or projections are alike."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            if p.requires_grad and p.is_floating_point():
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def record_calls(modules):
    """Forward hooks that record (input, output) of each call of each module."""
    calls = []

    def hook(mod, inp, out):
        if inp and isinstance(inp[0], torch.Tensor) and isinstance(out, torch.Tensor):
            calls.append((inp[0].detach().clone(), out.detach().clone()))

    return calls, [m.register_forward_hook(hook) for m in modules]


@probe
def block_dissected(n_embd, n_head, block_size, seed, x):
    """A Block with random parameters: its output on x, what its CausalSelfAttention
    submodule(s) received and returned, and the parameters outside them."""
    torch.manual_seed(seed)
    blk = gpt.Block(n_embd, n_head, block_size).eval()
    randomize(blk, seed)
    attn = [(n, m) for n, m in blk.named_modules() if isinstance(m, gpt.CausalSelfAttention)]
    calls, hooks = record_calls([m for _, m in attn])
    try:
        with torch.no_grad():
            out = blk(x)
    finally:
        for h in hooks:
            h.remove()
    inside = tuple(n + "." for n, _ in attn)
    rest = [(n, p.detach().clone()) for n, p in blk.named_parameters() if not n.startswith(inside)]
    return {"out": out, "attention_calls": calls, "rest": rest}


def norms_and_linears(params, C):
    """The parameters as LayerNorm-like (weight (C,), bias or None) and Linear-like
    (weight (out, in), bias or None) groups; None when some parameter is neither."""
    groups = {}
    for name, t in params:
        prefix, _, leaf = name.rpartition(".")
        groups.setdefault(prefix, {})[leaf] = t
    norms, linears = [], []
    for g in groups.values():
        w, b = g.get("weight"), g.get("bias")
        if set(g) - {"weight", "bias"} or w is None:
            return None
        if tuple(w.shape) == (C,) and (b is None or tuple(b.shape) == (C,)):
            norms.append((w, b))
        elif w.dim() == 2 and (b is None or tuple(b.shape) == (w.shape[0],)):
            linears.append((w, b))
        else:
            return None
    return norms, linears


def close(a, b, tol=1e-4):
    """a is b within tol relative to b's largest magnitude (a tensor of b's shape)."""
    return judge.is_close(a, b, atol=tol * (1 + b.abs().max().item()), rtol=0.0, dtype="float")


OTHER_ACTIVATIONS = [  # what a Block's MLP might apply instead of GELU, for the message
    ("no activation", lambda z: z),
    ("ReLU", F.relu),
    ("SiLU", F.silu),
    ("tanh", torch.tanh),
    ("sigmoid", torch.sigmoid),
    ("LeakyReLU", F.leaky_relu),
    ("ELU", F.elu),
    ("Mish", F.mish),
    ("Softplus", F.softplus),
]


def mlp(h, norm, fc, proj, approximate):
    C = h.shape[-1]
    z = F.linear(F.layer_norm(h, (C,), *norm), *fc)
    return F.linear(F.gelu(z, approximate=approximate), *proj)


@pytest.mark.task("ch10.5")
@pytest.mark.parametrize("C, H, T", [(16, 4, 9), (12, 3, 12)])
def test_block_computes_the_pre_norm_residual_branches(C, H, T):
    """With its own (random) weights a Block computes h = x + attn(ln1(x)), then h + mlp(ln2(h)), the MLP a 4x-wide GELU layer."""
    x = torch.randn(2, T, C, generator=torch.Generator().manual_seed(T))
    with because(f"Block({C}, {H}, 12) raised {SLICE}"):
        seen = block_dissected(C, H, 12, 1, x)
    judge.answer(seen["out"], (2, T, C), f"Block({C}, {H}, 12) on x[2, {T}, {C}]")
    parts = norms_and_linears(seen["rest"], C)
    if len(seen["attention_calls"]) != 1 or parts is None:
        return  # no CausalSelfAttention inside, or unusual parameters: not observable this way
    norms, linears = parts
    shapes = sorted(tuple(w.shape) for w, _ in linears)
    if len(norms) != 2 or shapes != sorted([(4 * C, C), (C, 4 * C)]):
        return  # another layout of the block's own parameters
    a_in, a_out = seen["attention_calls"][0]
    fc = next(m for m in linears if m[0].shape[0] == 4 * C)
    proj = next(m for m in linears if m[0].shape[0] == C)
    out, h = seen["out"], x + a_out
    reads = [n for n in norms if close(a_in, F.layer_norm(x, (C,), *n))]
    assert reads, (
        "the attention inside the Block does not receive a LayerNorm of the block's input"
        + (" (it receives the input itself: post-norm?)" if close(a_in, x) else "")
        + ": pre-norm is x + attn(ln1(x))"
    )
    ln2 = [n for n in norms if n is not reads[0]] if len(reads) == 1 else norms
    matched = any(
        close(out, h + mlp(h, n, fc, proj, approximate))
        for n in ln2
        for approximate in ("none", "tanh")
    )
    n, diagnosis = ln2[0], ""
    other = (
        None
        if matched
        else next(
            (
                name
                for name, act in OTHER_ACTIVATIONS
                for m in ln2
                if close(out, h + F.linear(act(F.linear(F.layer_norm(h, (C,), *m), *fc)), *proj))
            ),
            None,
        )
    )
    if matched:
        pass
    elif close(out, h + mlp(x, n, fc, proj, "none")):
        diagnosis = " (its MLP reads ln2 of the block's input, not of x + attn(ln1(x)))"
    elif other == "no activation":
        diagnosis = " (its MLP has no GELU between the two linear maps)"
    elif other:
        diagnosis = (
            f" (its MLP applies {other} between the two linear maps, and everything else "
            "matches: the reading's MLP applies GELU there)"
        )
    elif close(out, h + mlp(h, reads[0], fc, proj, "none")):
        diagnosis = " (the MLP branch reuses ln1 instead of its own LayerNorm)"
    assert matched, (
        f"Block({C}, {H}): with h = x + attn(ln1(x)) the output is not h + mlp(ln2(h))"
        f"{diagnosis}; the reading's MLP is a linear layer C -> 4C, GELU, and a linear layer "
        f"4C -> C; {first_difference(out, h + mlp(h, n, fc, proj, 'none'))}"
    )


@pytest.mark.task("ch10.5")
@pytest.mark.parametrize("C, H", [(12, 3), (20, 4)])
def test_block_holds_a_layer_norm_per_branch_and_a_4x_mlp(C, H):
    """Outside its attention a Block holds the reading's layers: two LayerNorms (ln1, ln2) and a 4x-wide MLP, C -> 4C -> C."""
    x = torch.randn(2, 5, C, generator=torch.Generator().manual_seed(C))
    with because(f"Block({C}, {H}, 8) raised {SLICE}"):
        seen = block_dissected(C, H, 8, 2, x)
    judge.answer(seen["out"], (2, 5, C), f"Block({C}, {H}, 8) on x[2, 5, {C}]")  # a Block that runs
    parts = norms_and_linears(seen["rest"], C)
    if len(seen["attention_calls"]) != 1 or parts is None:
        return  # no CausalSelfAttention inside, or unusual parameters: not observable this way
    norms, linears = parts
    assert len(norms) == 2, (
        f"outside its attention, Block({C}, {H}) holds {len(norms)} LayerNorm parameter set(s) "
        f"((C,)-shaped weight and bias); the reading's block has two, ln1 for the attention "
        "branch and ln2 for the MLP branch"
        + (
            ": one LayerNorm shared by both branches computes the same at initialization, but it "
            "has half the parameters and other state_dict keys, and training cannot scale the "
            "two branches' inputs apart"
            if len(norms) == 1
            else ""
        )
    )
    shapes = sorted(tuple(w.shape) for w, _ in linears)
    want = sorted([(4 * C, C), (C, 4 * C)])
    assert shapes == want, (
        f"the Block's MLP weights have shapes {shapes}, expected {want}: the reading's MLP is "
        "4x wide — Linear(n_embd, 4 * n_embd), GELU, Linear(4 * n_embd, n_embd)"
    )


# ---------------------------------------------------------------- ch10.6


@pytest.mark.task("ch10.6")
def test_square_gpt_is_causal_and_calibrated_at_init():
    """With vocab == block_size == n_embd the logits at t ignore later tokens, and the loss at init is about ln(vocab)."""
    idx = torch.randint(24, (4, 24))
    variants = []
    for cut in (1, 12, 23):
        idx2 = idx.clone()
        idx2[:, cut:] = (idx2[:, cut:] + 7) % 24
        variants.append(idx2)
    logits, *others = [lg for lg, _ in gpt_forward((24, 24, 1, 2, 24), 7, [idx, *variants])]
    for cut, lg in zip((1, 12, 23), others):
        moved = (lg[:, :cut] - logits[:, :cut]).abs().max().item()
        assert moved < 1e-5, (
            f"logits at positions < {cut} change when only later tokens change: the model sees the future"
        )
    ((_, loss),) = gpt_forward(
        (100, 16, 2, 4, 32), 8, [torch.randint(100, (8, 16))], [torch.randint(100, (8, 16))]
    )
    assert abs(float(loss) - math.log(100)) < 0.5, (
        f"the loss at initialization is {float(loss):.3f}, not close to ln(100) = {math.log(100):.3f}"
    )


@probe
def row_gradients(cases):
    """For each (cfg, seed, idx, targets): a GPT(*cfg) built after torch.manual_seed(seed),
    one backward of its loss; per parameter outside its Block submodules with two or more
    axes: (name, shape, the largest |gradient| of each row of its last axis), None where
    it got no gradient."""
    seen = []
    for cfg, seed, idx, targets in cases:
        torch.manual_seed(seed)
        model = gpt.GPT(*cfg)
        _, loss = model(idx, targets)
        loss.backward()
        blocks = tuple(n + "." for n, m in model.named_modules() if isinstance(m, gpt.Block))
        rows = []
        for name, p in model.named_parameters():
            if p.dim() < 2 or name.startswith(blocks):
                continue
            g = None if p.grad is None else p.grad.detach().reshape(-1, p.shape[-1])
            rows.append((name, tuple(p.shape), None if g is None else g.abs().amax(dim=1)))
        seen.append(rows)
    return seen


@probe
def position_code_jacobians(cases):
    """For each (cfg, seed, token): a GPT(*cfg) built after torch.manual_seed(seed), called on
    one sequence of block_size copies of token; x0, the input of its first Block call, and
    for each position t >= 1 and channel c the gradient of x0[0, t, c] - x0[0, 0, c] with
    respect to every trainable parameter, flattened and joined: a ((T-1) * C, P) matrix,
    zeros where no trainable parameter reaches it. None where no Block runs on (1, T, C)."""
    seen = []
    for cfg, seed, token in cases:
        torch.manual_seed(seed)
        model = gpt.GPT(*cfg).eval()
        T = cfg[1]
        firsts = []

        def first_input(mod, args, firsts=firsts):
            if not firsts and args and isinstance(args[0], torch.Tensor):
                firsts.append(args[0])

        blocks = [m for m in model.modules() if isinstance(m, gpt.Block)]
        hooks = [m.register_forward_pre_hook(first_input) for m in blocks]
        try:
            model(torch.full((1, T), token, dtype=torch.long))
        finally:
            for h in hooks:
                h.remove()
        if not firsts or firsts[0].dim() != 3 or tuple(firsts[0].shape[:2]) != (1, T):
            seen.append(None)
            continue
        x0 = firsts[0]
        params = [p for p in model.parameters() if p.requires_grad]
        width = sum(p.numel() for p in params)
        rows = []
        for t in range(1, T):
            for c in range(x0.shape[-1]):
                if not (x0.requires_grad and params):
                    rows.append(torch.zeros(width))
                    continue
                grads = torch.autograd.grad(
                    x0[0, t, c] - x0[0, 0, c], params, retain_graph=True, allow_unused=True
                )
                rows.append(
                    torch.cat(
                        [
                            (torch.zeros(p.numel()) if g is None else g.detach().reshape(-1))
                            for p, g in zip(params, grads)
                        ]
                    )
                )
        seen.append(torch.stack(rows) if rows else torch.zeros(0, width))
    return seen


def every_token_at_every_position(V, T, rng):
    """A (B, T) batch over V ids in which every id 0..V-1 and every position 0..T-1 occur
    (ids placed at random), and random targets."""
    B = max(1, -(-V // T)) + rng.randint(0, 1)
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    idx = torch.randint(V, (B * T,), generator=g)
    idx[torch.randperm(B * T, generator=g)[:V]] = torch.arange(V)
    return idx.view(B, T), torch.randint(V, (B, T), generator=g)


@pytest.mark.task("ch10.6")
def test_every_layer_is_registered_and_trained():
    """Parameters and state_dict grow with n_layer, the loss reaches every parameter, every token's and every position's embedding row included, and training can change every position's code."""
    one, two, three = gpt_structure(20, 8, 2, 16, [1, 2, 3])
    grows = one["parameters"] < two["parameters"] < three["parameters"]
    assert grows and one["state"] < two["state"] < three["state"], (
        "the number of parameters or of state_dict entries does not grow with n_layer: the blocks "
        "are not registered as submodules"
    )
    assert not three["unreached"], f"parameters the loss never reaches: {three['unreached'][:4]}"
    assert_stays_on_the_device("gpt")
    # every character is a real token (id 0 is the smallest one) and every position is used:
    # on a batch holding every id at every position, no embedding row may be cut off
    rng = random.Random(1013)
    cases = []
    for V, T in [
        (2, 1),
        (3, 7),
        (2, 9),
        *((rng.randint(2, 40), rng.randint(1, 9)) for _ in range(3)),
    ]:
        H = rng.choice((1, 2))
        cfg = (V, T, 1, H, 4 * H)
        cases.append((cfg, rng.randrange(100), *every_token_at_every_position(V, T, rng)))
    for (cfg, _, idx, _), rows in zip(cases, row_gradients(cases)):
        for name, shape, norms in rows:
            if norms is None:
                continue  # a parameter with no gradient at all is the check above's
            dead = [r for r, v in enumerate(norms.tolist()) if not v > 1e-7 * norms.max().item()]
            assert not dead, (
                f"GPT{cfg} on a {tuple(idx.shape)} batch that holds every token id 0..{cfg[0] - 1} "
                f"at every position 0..{idx.shape[1] - 1}: after one backward, rows {dead[:5]} of "
                f"{name} (shape {shape}) got no gradient; every character is a real token (id 0 "
                "is simply the smallest) and every position is used, so each embedding row the "
                "batch reads must learn: look for an embedding option that freezes a row (a "
                "padding index) or a gradient cut for some ids or positions"
            )
    check_positions_are_learned(random.Random(1014))


def check_positions_are_learned(rng):
    """On one token repeated at every position, the differences between positions in the
    first Block's input move with the trainable parameters in every direction: each
    position's code is a learned vector, not a fixed table."""
    cases = [((2, 2, 1, 1, 4), 0, 0), ((5, 5, 1, 2, 8), 1, 4)]
    for _ in range(2):
        V, T, H = rng.randint(2, 30), rng.randint(2, 6), rng.choice((1, 2))
        cases.append(((V, T, rng.choice((1, 2)), H, 4 * H), rng.randrange(100), rng.randrange(V)))
    for (cfg, _, token), jac in zip(cases, position_code_jacobians(cases)):
        if jac is None:
            continue  # no Block runs on the embedded sequence: not observable this way
        V, T, _, _, C = cfg
        want = (T - 1) * C
        judge.answer(jac, (want, jac.shape[1]), f"GPT{cfg}: the position-code gradients")
        rank = 0 if want == 0 else int(torch.linalg.matrix_rank(jac.double()))
        where = (
            f"GPT{cfg} on token {token} repeated at all {T} positions: the first Block's input "
            "at each position is the token's embedding plus that position's code, and training"
        )
        assert rank > 0, (
            f"{where} cannot change that code at all (no trainable parameter has a gradient "
            "from the difference between two positions of the embedded sequence): the position "
            "code is fixed. The reading's position embedding is learned, one trainable vector "
            "of n_embd values per position 0..block_size-1, added to the token embedding; a "
            "fixed table (sinusoidal, random, a buffer) or a frozen embedding encodes positions "
            "in a way training can never adjust"
        )
        assert rank == want, (
            f"{where} can move that code in only {rank} of the {want} directions in which "
            f"{'position 1' if T == 2 else f'positions 1..{T - 1}'} can differ from position 0: "
            "the reading's position embedding "
            "gives each position its own learned vector of n_embd values, so training can "
            "shape every position's code freely; a fixed table with a few learned scales on it "
            "cannot"
        )


@pytest.mark.task("ch10.6")
@pytest.mark.parametrize("cfg", [(24, 12, 1, 3, 24), (10, 6, 3, 2, 12)])
def test_final_layer_norm_at_other_sizes(cfg):
    """The head reads a LayerNorm of the stream: huge embeddings do not make the logits grow with them."""
    idx = torch.randint(cfg[0], (3, cfg[1]))
    found, (small, large) = logits_with_scaled_embeddings(cfg, 4, idx, [3e3, 3e4])
    if not found:
        return  # nothing to scale from outside: the property cannot be observed
    ratio = large.norm().item() / max(small.norm().item(), 1e-30)
    assert 0.5 < ratio < 1.5, (
        f"10x larger embeddings changed the logits' size by {ratio:.3g}: apply a final LayerNorm "
        "before the head"
    )


@probe
def gpt_forward_in_dtypes(cfg, seed, idxs, targets, dtypes):
    """For each (idx, targets, dtype name): GPT(*cfg) built after torch.manual_seed(seed), in
    eval mode, converted with .to(torch.<dtype>), called on (idx, targets): (logits, loss)."""
    runs = []
    for idx, y, dtype in zip(idxs, targets, dtypes):
        torch.manual_seed(seed)
        model = gpt.GPT(*cfg).eval().to(getattr(torch, dtype))
        with torch.no_grad():
            runs.append(model(idx, y))
    return runs


@pytest.mark.task("ch10.6")
def test_loss_is_the_mean_cross_entropy_at_every_size():
    """The loss is the mean cross-entropy over all B*T positions, for one sequence of one token too, in a float32 or a float64 model (to its precision), and tokens and targets in any memory layout (transposed, strided, offset) give the same logits and loss."""
    cases = [(1, 1, "float64"), (4, 5, "float32"), (2, 3, "float64")]
    idxs = [torch.randint(7, (b, t)) for b, t, _ in cases]
    targets = [torch.randint(7, (b, t)) for b, t, _ in cases]
    with because(f"GPT(7, 5, 1, 1, 8), float32 or .to(torch.float64), raised {SLICE}"):
        runs = gpt_forward_in_dtypes((7, 5, 1, 1, 8), 2, idxs, targets, [c[2] for c in cases])
    for (b, t, dtype), (logits, loss), y in zip(cases, runs, targets):
        assert tuple(logits.shape) == (b, t, 7), (
            f"logits of a ({b}, {t}) input have shape {tuple(logits.shape)}"
        )
        want = cross_entropy(logits, y)
        if dtype == "float32":
            assert abs(float(loss) - want) < 1e-4, (
                f"on a ({b}, {t}) batch the loss is {float(loss):.5f}, the mean cross-entropy of "
                f"the logits over all positions is {want:.5f}"
            )
            continue
        # a float64 model: its loss is the cross-entropy of its own logits to float64 rounding
        judge.close(
            loss,
            torch.tensor(want, dtype=torch.float64),
            f"a float64 GPT(7, 5, 1, 1, 8) on a ({b}, {t}) batch: its loss is not the mean "
            f"cross-entropy of its own logits over all positions ({want!r}) to float64 "
            "precision (or is not a float64 0-d tensor). Dtypes are free: compute the loss in "
            "the logits' dtype, with nothing added inside the log (an epsilon that vanishes in "
            "float32 shows in float64) and no cast to float32 — F.cross_entropy does it exactly",
            atol=1e-13,
            rtol=1e-12,
        )
    g = torch.Generator().manual_seed(8)
    idx, y = torch.randint(7, (3, 4), generator=g), torch.randint(7, (3, 4), generator=g)
    check_layouts(
        "gpt", (7, 5, 1, 1, 8), [idx, y], "GPT(7, 5, 1, 1, 8) on (3, 4) tokens and targets"
    )


@probe
def gpt_on_more_positions(cfg, seed, idx, with_targets):
    """GPT(*cfg) built after torch.manual_seed(seed), called on idx (with idx as targets if
    asked): the name of the exception it raised, or the shape of the logits it returned."""
    torch.manual_seed(seed)
    model = gpt.GPT(*cfg)
    try:
        logits, _ = model(idx, idx if with_targets else None)
    except Exception as exc:  # noqa: BLE001 - refusing is the contract; how is the student's
        return {"raised": type(exc).__name__}
    return {"raised": None, "logits": tuple(logits.shape)}


@pytest.mark.task("ch10.6")
def test_gpt_refuses_more_positions_than_block_size():
    """GPT.forward refuses an input longer than block_size (it has only block_size position embeddings) rather than cropping it or returning fewer positions."""
    for V, block, extra, with_targets in ((5, 2, 1, False), (9, 6, 1, True), (7, 4, 5, False)):
        T = block + extra
        idx = torch.randint(V, (2, T), generator=torch.Generator().manual_seed(T))
        seen = gpt_on_more_positions((V, block, 1, 1, 4), 3, idx, with_targets)
        assert seen["raised"], (
            f"GPT({V}, block_size={block}, 1, 1, 4) called on idx of shape (2, {T})"
            f"{' with targets' if with_targets else ''} returned logits of shape "
            f"{seen['logits']} instead of refusing: the model has {block} position embeddings, "
            f"so more than {block} positions is an error (raise, e.g. ValueError); cropping the "
            "context to the last block_size tokens is generate's job, done before it calls the "
            "model, and forward's logits always have the input's T"
        )


@probe
def gpt_dissected(cfg, seed, idx):
    """A GPT with random parameters: its logits on idx, the (input, output) of every call
    of its Block submodules in call order, and the parameters outside the blocks."""
    torch.manual_seed(seed)
    model = gpt.GPT(*cfg).eval()
    randomize(model, seed)
    blocks = [(n, m) for n, m in model.named_modules() if isinstance(m, gpt.Block)]
    calls, hooks = record_calls([m for _, m in blocks])
    try:
        with torch.no_grad():
            logits = model(idx)[0]
    finally:
        for h in hooks:
            h.remove()
    inside = tuple(n + "." for n, _ in blocks)
    rest = [
        (n, p.detach().clone()) for n, p in model.named_parameters() if not n.startswith(inside)
    ]
    return {"logits": logits, "block_calls": calls, "blocks": len(blocks), "rest": rest}


@pytest.mark.task("ch10.6")
def test_gpt_chains_embeddings_blocks_final_norm_and_head():
    """With its own (random) weights: the first Block reads tok_emb[idx] + pos_emb[:T], each Block reads the previous one's output, and logits = head(ln_f(last output))."""
    V, block, n_layer, C = 11, 7, 3, 12
    idx = torch.randint(V, (2, 6), generator=torch.Generator().manual_seed(5))
    with because(f"GPT({V}, {block}, {n_layer}, 3, {C}) raised {SLICE}"):
        seen = gpt_dissected((V, block, n_layer, 3, C), 2, idx)
    calls = seen["block_calls"]
    if not seen["blocks"]:
        return  # no Block submodules to observe
    assert len(calls) == n_layer, (
        f"GPT(n_layer={n_layer}) ran its Block modules {len(calls)} times on one forward: each "
        "block runs once, in order"
    )
    for k in range(1, n_layer):
        assert close(calls[k][0], calls[k - 1][1]), (
            f"block {k} does not read block {k - 1}'s output: the blocks form one chain"
        )
    rest = seen["rest"]
    tables = [t for _, t in rest if tuple(t.shape) == (V, C)]
    positions = [
        t.reshape(block, C) for _, t in rest if t.numel() == block * C and t.shape[-1] == C
    ]
    first = calls[0][0]
    if positions:
        ok = any(close(first, E[idx] + P[: idx.shape[1]]) for E in tables for P in positions)
        assert ok, (
            "the first Block's input is not tok_emb[idx] + pos_emb[:T]: add the token embedding "
            "and the position embedding of positions 0..T-1"
        )
    h = calls[-1][1]
    names = dict(rest)
    norms = []
    for name, t in rest:
        prefix, _, leaf = name.rpartition(".")
        if leaf == "weight" and tuple(t.shape) == (C,):
            b = names.get(f"{prefix}.bias" if prefix else "bias")
            norms.append((t, b if b is not None and tuple(b.shape) == (C,) else None))
    biases = [t for _, t in rest if tuple(t.shape) == (V,)] + [None]
    logits = seen["logits"]
    heads = [(W, b) for W in tables for b in biases]
    if any(close(logits, F.linear(F.layer_norm(h, (C,), *n), *hd)) for n in norms for hd in heads):
        return
    skipped = any(close(logits, F.linear(h, *hd)) for hd in heads)
    assert not skipped, (
        "the logits are head(last block's output): the final LayerNorm is missing — "
        "logits = head(ln_f(x))"
    )
    assert not (norms and heads), (
        "the logits are not head(ln_f(x)) of the last block's output x, for any reading of the "
        "GPT's own LayerNorm and head parameters"
    )


# ---------------------------------------------------------------- ch10.7


@pytest.mark.task("ch10.7")
def test_tiny_temperature_is_greedy():
    """As the temperature goes to 0, sampling becomes the argmax of the last position's logits."""
    table = torch.randn(6, 6, generator=torch.Generator().manual_seed(3))
    idx = torch.tensor([[0], [1], [2], [3], [4], [5]]).repeat(50, 1)
    out = generated("markov", idx, 3, 1e-3, 1, table=table, block_size=5)["out"]
    greedy = idx.clone()
    for _ in range(3):
        greedy = torch.cat([greedy, table[greedy[:, -1]].argmax(-1, keepdim=True)], dim=1)
    judge.equal(
        out,
        greedy,
        "at temperature 1e-3 generate did not take the argmax of the last position's logits: "
        "divide the logits by the temperature before the softmax",
    )


@pytest.mark.task("ch10.7")
def test_each_row_samples_from_its_own_last_token_past_the_block():
    """Past block_size, each row's next token follows the softmax of its own last position; the prompt is left unchanged."""
    table = torch.tensor([[0.0, 3.0, 0.0], [0.0, 0.0, 3.0], [3.0, 0.0, 0.0]]) * 0.5
    n = 6000
    idx = torch.cat([torch.zeros(n, 6, dtype=torch.long), torch.full((n, 6), 2)])
    idx[:n, -1] = 1  # first half ends in token 1, second half in token 2
    with because(f"generate on a prompt longer than block_size raised: {CROP}"):
        seen = generated("markov", idx, 2, 1.0, 9, table=table, block_size=4)
    out = seen["out"]
    judge.equal(
        seen["prompt_after"], idx, "generate must not modify the prompt tensor it was given"
    )
    for rows, last in ((slice(0, n), 1), (slice(n, 2 * n), 2)):
        freq = torch.bincount(out[rows, 6], minlength=3).double() / n
        want = F.softmax(table[last].double(), -1)
        assert (freq - want).abs().max().item() < 0.03, (
            f"rows ending in token {last}: the first generated token has frequencies "
            f"{[round(v, 3) for v in freq.tolist()]}, expected the softmax of that row's last "
            f"position {[round(v, 3) for v in want.tolist()]}"
        )


@pytest.mark.task("ch10.7")
@pytest.mark.parametrize("V, temperature", [(80, 0.7), (30, 1.5), (65, 1.0)], ids=str)
def test_generate_draws_from_the_full_softmax_at_other_sizes(V, temperature):
    """Every token of a large vocabulary is drawn with its softmax(logits / temperature) probability, per row: no top-k or top-p cut."""
    n = 12000
    table = torch.randn(V, V, generator=torch.Generator().manual_seed(V))
    idx = torch.cat([torch.full((n, 3), 2), torch.full((n, 3), V - 1)])
    out = generated("markov", idx, 1, temperature, 13, table=table, block_size=4)["out"]
    for rows, last in ((slice(0, n), 2), (slice(n, 2 * n), V - 1)):
        freq = torch.bincount(out[rows, -1], minlength=V).double() / n
        want = F.softmax(table[last].double() / temperature, dim=-1)
        problem = sampling_problem(
            freq, want, n, f"generate at temperature {temperature} after token {last}"
        )
        assert problem is None, (
            f"over a {V}-token vocabulary, {problem}: sample from the full softmax of the last "
            "position's logits divided by the temperature — every token keeps its probability, "
            "no top-k or top-p cut"
        )


@pytest.mark.task("ch10.7")
def test_generation_window_at_other_sizes():
    """The model always receives the last block_size tokens (the whole sequence while shorter), from a single token on."""
    for prompt, block, vocab in (
        ([[4]], 3, 5),
        ([[0, 1, 2]], 3, 5),
        ([[2, 0, 1, 4, 3, 3, 1]] * 3, 5, 7),
    ):
        idx = torch.tensor(prompt)
        with because(f"generate with block_size {block} raised: {CROP}"):
            out = generated("window", idx, 9, 1.0, 2, vocab=vocab, block_size=block)["out"]
        want = window_rule(idx, 9, vocab, block)
        judge.equal(
            out,
            want,
            f"from the prompt {prompt[0]} with block_size {block}, generate gave {out[0].tolist()}, "
            f"expected {want[0].tolist()}: the context is the last block_size tokens",
        )


@pytest.mark.task("ch10.7")
def test_zero_new_tokens_returns_the_prompt():
    """max_new_tokens = 0 returns the prompt itself (same tokens, same shape)."""
    idx = torch.tensor([[1, 2, 3], [3, 2, 1]])
    out = generated("window", idx, 0, 1.0, 0, vocab=4, block_size=3)["out"]
    judge.equal(out, idx, f"generate(..., max_new_tokens=0) returned {brief(out)}")


@pytest.mark.task("ch10.7")
def test_the_default_temperature_is_one():
    """Leaving the temperature out samples exactly as temperature 1.0 does."""
    table = torch.randn(5, 5, generator=torch.Generator().manual_seed(8))
    idx = torch.tensor([[0, 1], [2, 3]])
    runs = [
        generated("markov", idx, 12, t, 4, table=table, block_size=4)["out"] for t in (None, 1.0)
    ]
    for out in runs:  # two equal non-answers are not "the same sampling"
        judge.all_true(
            (out >= 0) & (out < 5)
            if type(out) is torch.Tensor and out.dtype == torch.long
            else out,
            "generate(model, idx[2, 2], 12) returns the prompt and 12 new token ids below vocab 5",
            shape=(2, 14),
        )
    judge.equal(
        runs[0], runs[1], "generate's temperature defaults to 1.0 (the signature's default)"
    )


class TinyLM(nn.Module):
    """A small learnable model whose logits at t depend on tokens t and t-1."""

    def __init__(self, vocab: int, block_size: int, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.now = nn.Parameter(torch.randn(vocab, vocab, generator=g))
        self.before = nn.Parameter(torch.randn(vocab, vocab, generator=g))
        self.block_size = block_size

    def forward(self, idx, targets=None):
        if idx.shape[1] > self.block_size:
            raise ValueError(f"{idx.shape[1]} positions exceed block_size {self.block_size}")
        prev = torch.cat([idx[:, :1], idx[:, :-1]], dim=1)
        return self.now[idx] + self.before[prev], None


@probe
def tiny_lm_round_trip(idx, new_tokens, seed):
    """generate with a TinyLM, with a TinyLM of other weights that loaded its state_dict, and
    with that other TinyLM before loading, each under a generator seeded with seed."""
    model, fresh, other = TinyLM(5, 4, 1), TinyLM(5, 4, 2), TinyLM(5, 4, 2)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer))
    return [
        gpt.generate(m, idx.clone(), new_tokens, 1.0, torch.Generator().manual_seed(seed))
        for m in (model, fresh, other)
    ]


@pytest.mark.task("ch10.7")
def test_generation_depends_only_on_the_model_state_and_the_generator():
    """A model reloaded from a state_dict generates exactly the same tokens under the same generator seed."""
    idx = torch.tensor([[0, 1], [2, 3], [4, 4]])
    with because(f"generate raised: {CROP}"):
        a, b, c = tiny_lm_round_trip(idx, 15, 6)
    judge.equal(
        a,
        b,
        "a model and its reloaded copy generate different tokens under the same generator seed: "
        "generation must depend only on the model's weights, the prompt and the generator",
    )
    assert judge.differ(a, c, atol=0, rtol=0), (
        "models with different weights generated the same 45 tokens"
    )


@probe
def generated_from_one_generator(idx, new_tokens, seed):
    """generate twice with one generator seeded with seed, then once with a generator seeded
    alike that the caller drew from first, all on one TinyLM as a caller may hold it (eval
    mode, a gradient left in .grad, one parameter frozen): the three outputs."""
    model = TinyLM(6, 4, 7)
    model(idx[:, -4:])[0].square().sum().backward()
    model.before.requires_grad_(False)
    model.eval()
    g = torch.Generator().manual_seed(seed)
    outs = [gpt.generate(model, idx, new_tokens, 1.0, g) for _ in range(2)]
    drawn = torch.Generator().manual_seed(seed)
    torch.rand(1, generator=drawn)
    outs.append(gpt.generate(model, idx, new_tokens, 1.0, drawn))
    return outs


@pytest.mark.task("ch10.7")
def test_generate_continues_the_generator_it_is_given():
    """generate draws from the generator it is given, from where it stands: two calls with one generator continue its stream, and a generator already drawn from gives other tokens than a fresh one; the caller's model (eval mode, a .grad, a frozen parameter) stays as given."""
    idx = torch.tensor([[0, 1, 2], [3, 4, 5]])
    with because(f"generate on a TinyLM in eval mode raised: {CROP}"):
        first, second, drawn = generated_from_one_generator(idx, 20, 8)
    assert judge.differ(first, second, atol=0, rtol=0), (
        "two generate(model, idx, 20, 1.0, g) calls with the same generator g gave the same 40 "
        "tokens: a generator is a stream, and the second call must continue it — sampling from "
        "a clone of g, or from a generator re-seeded with g.initial_seed(), repeats the first "
        "call and leaves g where it was"
    )
    assert judge.differ(first, drawn, atol=0, rtol=0), (
        "generate with a generator the caller had already drawn from gave the same 40 tokens "
        "as with a freshly seeded one: sample with the generator as it is "
        "(torch.multinomial(..., generator=generator)), never re-seed it"
    )


# ---------------------------------------------------------------- ch10.8


@pytest.mark.task("ch10.8")
@pytest.mark.timeout(180)
def test_another_configuration_learns_from_context():
    """Another configuration and seed also ends clearly below the unigram entropy; val_data is the last 10% of the tokens."""
    text = corpus()
    cfg = dict(steps=150, block_size=16, batch_size=24, n_layer=1, n_head=2, n_embd=32, lr=4e-3)
    r = training_run(text, 1, "next", cfg)
    val = r["val_data"]
    tail = len(text) - int(0.9 * len(text))  # 90% of the tokens is not a whole number here
    chars = sorted(set(text))
    want = torch.tensor([chars.index(c) for c in text[-len(val) :]])
    assert val.dtype == torch.int64 and abs(len(val) - tail) <= 1 and judge.is_equal(val, want), (
        f"val_data is {brief(val)}; it must be the last 10% of the tokens (rounded either way), int64"
    )
    _, y = windows(val, 16)
    true_val = cross_entropy(r["window_logits"], y)
    assert true_val < unigram_entropy(text) - 0.3, (
        f"the trained model's loss on the true next tokens of val_data is {true_val:.3f}, not "
        f"clearly below the unigram entropy {unigram_entropy(text):.3f}: it has not learned to use context"
    )
    assert abs(r["val_loss"] - true_val) < 0.3, (
        f"the reported val_loss {r['val_loss']:.3f} disagrees with the model's next-token loss "
        f"{true_val:.3f} on val_data"
    )


@pytest.mark.task("ch10.8")
@pytest.mark.timeout(120)
def test_training_is_deterministic_per_seed():
    """train_gpt's losses depend on its seed only, not on the global random state before the call."""
    text = corpus()[3000:6000]
    cfg = dict(TINY, steps=6, n_embd=24, n_head=3)
    a, b, c = losses_under_global_seeds(text, [(2, 7), (2, 99), (3, 7)], cfg)
    assert a == b, (
        f"train_gpt(seed=2) gave {head_of(a)} and {head_of(b)} after different global seeds: seed "
        "the model construction (torch.manual_seed(seed) before building it) and the batch generator"
    )
    assert a != c, "two train_gpt runs with different seeds are identical"


@probe
def defaults_of_train_gpt(text):
    """The defaults in train_gpt's signature, and the train losses of a short run that leaves
    block_size, batch_size, lr, seed and batch_fn out next to one that passes the contract's
    values for them."""
    import inspect

    params = inspect.signature(gpt.train_gpt).parameters.items()
    defaults = {k: p.default for k, p in params if p.default is not inspect.Parameter.empty}
    short = dict(steps=2, n_layer=1, n_head=2, n_embd=8)
    implicit = gpt.train_gpt(text, **short).train_losses
    explicit = gpt.train_gpt(
        text, block_size=32, batch_size=16, lr=3e-3, seed=0, batch_fn=gpt.get_batch, **short
    ).train_losses
    return defaults, list(implicit), list(explicit)


@pytest.mark.task("ch10.8")
@pytest.mark.timeout(60)
def test_train_gpt_keeps_the_defaults_of_its_signature():
    """train_gpt's defaults are the contract's: steps=300, block_size=32, batch_size=16, n_layer=2, n_head=4, n_embd=64, lr=3e-3, seed=0, batch_fn=None (get_batch)."""
    want = dict(
        steps=300, block_size=32, batch_size=16, n_layer=2, n_head=4, n_embd=64, lr=3e-3, seed=0
    )
    got, implicit, explicit = defaults_of_train_gpt(corpus()[:3000])
    assert {k: got.get(k) for k in want} == want and got.get("batch_fn", 0) is None, (
        f"train_gpt's defaults are {got}; the signature of the exercise fixes {want} and batch_fn=None"
    )
    assert implicit == explicit, (
        f"train_gpt with its defaults gave losses {head_of(implicit)}, with block_size=32, "
        f"batch_size=16, lr=3e-3, seed=0, batch_fn=get_batch {head_of(explicit)}: the defaults "
        "must be used as the signature says"
    )


@probe
def parameters_after_one_step(text, seed, lrs, cfg):
    """train_gpt(text, steps=1, lr=lr, seed=seed, batch_fn=next_token_batch, **cfg) for each
    lr: the trained model's parameters, flattened and joined in parameters() order."""
    found = []
    for lr in lrs:
        r = gpt.train_gpt(text, steps=1, lr=lr, seed=seed, batch_fn=next_token_batch, **cfg)
        found.append(torch.cat([p.detach().reshape(-1) for p in r.model.parameters()]))
    return found


ONE_STEP_CFG = dict(block_size=8, batch_size=4, n_layer=1, n_head=2, n_embd=16)


@pytest.mark.task("ch10.8")
@pytest.mark.timeout(60)
def test_the_optimizer_is_adamw_with_its_decoupled_weight_decay():
    """train_gpt's optimizer is AdamW: its first step moves each parameter p by +-lr (Adam's normalized step) and by lr x 0.01 x p more (AdamW's decoupled weight decay, default 0.01)."""
    lr = 1e-2
    p0, p1 = parameters_after_one_step(corpus()[:2000], 5, [0.0, lr], ONE_STEP_CFG)
    assert p0.shape == p1.shape, "two train_gpt runs with one seed built models of different sizes"
    p0, moved = p0.double(), (p1 - p0).double()
    # Adam's first step is lr * g / (|g| + eps): +-lr wherever the gradient is not tiny, so
    # what is left after taking away +-lr is the decay, -lr * wd * p
    sure = (p0.abs() >= 0.25) & (moved.abs() > lr / 2)
    decay = -(moved - lr * moved.sign()) / (lr * p0)
    assert int(sure.sum()) >= 8, (
        f"train_gpt(steps=1, lr={lr}) moved only {int(sure.sum())} of the parameters that start "
        "at |p| >= 0.25 (the LayerNorm weights start at 1) by about lr: one AdamW step moves "
        "every parameter with a gradient by about lr"
    )
    wd = decay[sure].median().item()
    assert abs(wd - 0.01) < 0.002, (
        f"train_gpt(steps=1, lr={lr}) against the same run with lr=0 (the initial weights): the "
        f"{int(sure.sum())} parameters that start at |p| >= 0.25 moved by +-lr and by a further "
        f"{wd:.4f} x lr x p; AdamW's first step shrinks every parameter by lr x 0.01 x p (its "
        "decoupled weight decay, default 0.01) besides the +-lr. Build "
        "torch.optim.AdamW(model.parameters(), lr=lr) with its defaults: Adam has no such "
        "decay, Adam's weight_decay adds it to the gradient instead"
    )


class Recorder:
    """A correct batch function that records what train_gpt gave it and what it returned."""

    def __init__(self) -> None:
        self.calls = []

    def __call__(self, data, block_size, batch_size, generator=None):
        state = generator.get_state() if isinstance(generator, torch.Generator) else None
        x, y = next_token_batch(data, block_size, batch_size, generator)
        self.calls.append({"data": data.detach().clone(), "generator": state, "x": x, "y": y})
        return x, y


@probe
def recorded_training(text, seed, cfg, on=()):
    """train_gpt with a recording batch_fn: every call's data, generator state, x and y, the
    trained model's logits on each recorded x and on each x of ``on``, and train_gpt's
    result (its val_loss and training losses)."""
    rec = Recorder()
    r = gpt.train_gpt(text, seed=seed, batch_fn=rec, **cfg)
    model = r.model.eval()
    with torch.no_grad():
        logits = [model(c["x"])[0] for c in rec.calls]
        logits_on = [model(x)[0] for x in on]
    return {
        "calls": rec.calls,
        "logits": logits,
        "logits_on": logits_on,
        "val_loss": r.val_loss,
        "steps": len(r.train_losses),
        "train_losses": list(r.train_losses),
    }


SPLIT_CFG = dict(steps=6, block_size=8, batch_size=4, n_layer=1, n_head=2, n_embd=16)


def split_of(text):
    """Token ids of text and the possible training lengths (90%, rounded either way)."""
    chars = sorted(set(text))
    ids = torch.tensor([chars.index(c) for c in text])
    return ids, {math.floor(0.9 * len(ids)), math.ceil(0.9 * len(ids))}


@pytest.mark.task("ch10.8")
@pytest.mark.points(2)
@pytest.mark.timeout(120)
def test_batches_come_from_the_right_split():
    """Each training step draws one batch from the first 90% and records that batch's loss before its update; val_loss is the mean loss over 8 batch_fn batches from the last 10% (zero steps too: then of the initial model)."""
    text = corpus()[:4001]
    trained = check_split_and_validation(text, SPLIT_CFG["steps"])
    # train_losses[k] is the loss of step k's batch under the weights k steps gave: the run
    # of k steps (same seed, so the same start and the same batches) ends with those weights
    xs = [c["x"] for c in trained["calls"][:2]]
    before = [check_split_and_validation(text, k, on=[x]) for k, x in enumerate(xs)]
    for k, (seen, call) in enumerate(zip(before, trained["calls"])):
        want = cross_entropy(seen["logits_on"][0], call["y"])
        got = trained["train_losses"][k] if len(trained["train_losses"]) > k else None
        assert judge.is_number(got, want, abs=1e-4), (
            f"train_gpt(seed=2, steps={SPLIT_CFG['steps']}): train_losses[{k}] is {got!r}, but "
            f"the loss of step {k}'s batch under the weights of {k} step(s) (those train_gpt("
            f"seed=2, steps={k}) ends with) is {want:.5f}: each entry is that step's own training "
            "loss, computed on its batch before its update (not smoothed or averaged over "
            "earlier steps, not recomputed after the step)"
        )


def check_split_and_validation(text, steps, on=()):
    """train_gpt(text, steps) with a recording batch_fn: steps training batches, then 8 on
    the validation split whose mean loss is val_loss. What recorded_training saw."""
    with because(f"train_gpt(steps={steps}) raised" + ("" if steps else ZERO_STEPS)):
        seen = recorded_training(text, 2, {**SPLIT_CFG, "steps": steps}, on=list(on))
    ids, cuts = split_of(text)
    calls = seen["calls"]

    def kind(data):
        data = data.long()
        for n in cuts:
            if data.shape == ids[:n].shape and judge.is_equal(data, ids[:n]):
                return "train"
            if data.shape == ids[n:].shape and judge.is_equal(data, ids[n:]):
                return "val"
        return "other"

    kinds = [kind(c["data"]) for c in calls]
    observed = f"train_gpt(steps={steps}) called batch_fn {len(calls)} times, with: " + ", ".join(
        f"{k} x{n}" for k, n in _runs(kinds)
    )
    assert seen["steps"] == steps, (
        f"train_gpt(steps={steps}) returned {seen['steps']} training losses: one per step"
        + ("" if steps else ZERO_STEPS)
    )
    assert kinds[:steps] == ["train"] * steps, (
        f"{observed}; expected {steps} calls on the training split (the first 90% of the tokens), "
        "one per step, then 8 on the validation split"
    )
    assert kinds[steps:] == ["val"] * 8, (
        f"{observed}; after training, val_loss must be measured on 8 batches that batch_fn draws "
        "from the validation split (the last 10% of the tokens)" + ("" if steps else ZERO_STEPS)
    )
    val_losses = [cross_entropy(lg, c["y"]) for lg, c in zip(seen["logits"][steps:], calls[steps:])]
    want = sum(val_losses) / len(val_losses)
    assert judge.is_number(seen["val_loss"], want, abs=1e-4), (
        f"train_gpt(steps={steps}): val_loss is {seen['val_loss']!r}, but the trained model's mean "
        f"loss over the 8 validation batches batch_fn returned is {want:.5f}: val_loss is their "
        "mean loss (model in eval mode)" + ("" if steps else ZERO_STEPS)
    )
    return seen


ZERO_STEPS = (
    ". A run of steps=0 takes no step: no training losses, and val_loss is the initial "
    "model's, measured after the (empty) loop like any other run's; look at what gathers the "
    "steps' losses into one tensor, or a validation that only the last step triggers"
)


def _runs(kinds):
    out = []
    for k in kinds:
        if out and out[-1][0] == k:
            out[-1][1] += 1
        else:
            out.append([k, 1])
    return out


@pytest.mark.task("ch10.8")
@pytest.mark.timeout(120)
def test_batches_are_drawn_with_a_generator_seeded_with_seed():
    """batch_fn receives a torch.Generator seeded with seed (its state at the first call is manual_seed(seed)'s)."""
    seen = recorded_training(corpus()[:4001], 3, SPLIT_CFG)
    states = [c["generator"] for c in seen["calls"]]
    assert states and all(s is not None for s in states), (
        "train_gpt called batch_fn without a torch.Generator: pass a generator seeded with seed"
    )
    fresh = torch.Generator().manual_seed(3).get_state()
    judge.equal(
        states[0],
        fresh,
        "the generator train_gpt passed to batch_fn was not freshly seeded with seed at the first batch",
    )
