"""Public tests for ch10 — run with `pytest exercises/ch10` (add `--impl solutions` to
see the reference pass). The training tests take a few seconds each."""

import collections
import functools
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from harness.target import chapter_module, course_file

gpt = chapter_module("ch10", "gpt")

SMALL = dict(steps=150, block_size=32, batch_size=16, n_layer=2, n_head=4, n_embd=32, lr=3e-3)


def corpus() -> str:
    return course_file("data/ch10_corpus.txt").read_text()


def unigram_entropy(text: str) -> float:
    """Entropy (nats) of the character frequencies: the loss of the best model that ignores context."""
    counts, n = collections.Counter(text), len(text)
    return -sum(c / n * math.log(c / n) for c in counts.values())


def next_token_loss(model, data: torch.Tensor, block_size: int) -> float:
    """Mean cross-entropy of ``model`` on the true next token, over consecutive windows of ``data``."""
    n = (len(data) - 1) // block_size
    x = data[: n * block_size].view(n, block_size)  # (n, T)
    y = data[1 : n * block_size + 1].view(n, block_size)  # (n, T): the token after each x
    with torch.no_grad():
        logits, _ = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()


def copy_batch(data, block_size, batch_size, generator=None):
    """The chapter's broken batch: the target window is the input window itself."""
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()])
    return x, x.clone()


@functools.cache
def trained(misaligned: bool):
    return gpt.train_gpt(corpus(), seed=0, batch_fn=copy_batch if misaligned else None, **SMALL)


class MarkovModel(nn.Module):
    """A tiny fixed 'language model': the logits at position t are table[idx[:, t]]."""

    def __init__(self, table: torch.Tensor, block_size: int = 8) -> None:
        super().__init__()
        self.unused = nn.Parameter(torch.zeros(()))  # so model.parameters() gives a device
        self.register_buffer("table", table)
        self.block_size = block_size

    def forward(self, idx, targets=None):
        if idx.shape[1] > self.block_size:
            raise ValueError(f"got {idx.shape[1]} positions, block_size is {self.block_size}")
        return self.table[idx], None  # (B, T, V)


# ---------------------------------------------------------------- ch10.1 tokenizer


@pytest.mark.task("ch10.1")
@pytest.mark.points(2)
def test_tokenizer_round_trips_the_corpus():
    text = corpus()
    tok = gpt.CharTokenizer(text)
    assert tok.vocab_size == len(set(text)), (
        f"CharTokenizer(corpus).vocab_size is {tok.vocab_size}, but the corpus has {len(set(text))} "
        "distinct characters: one id per distinct character"
    )
    ids = tok.encode(text)
    assert sorted(set(ids)) == list(range(tok.vocab_size)), (
        "encode(corpus) should use exactly the ids 0 .. vocab_size-1, one per distinct character"
    )
    assert tok.decode(ids) == text, (
        "decode(encode(corpus)) is not the corpus: the two maps must be inverses"
    )
    assert tok.decode(torch.tensor(ids[:50])) == text[:50], (
        "decode should also accept a 1-D tensor of ids (generate returns tensors): convert with int()"
    )
    alphabet = "".join(sorted(set(text)))
    assert tok.encode(alphabet) == list(range(tok.vocab_size)), (
        f"CharTokenizer(corpus).encode(sorted characters) gave {tok.encode(alphabet)[:8]}...; the id of a "
        "character is its index in the SORTED list of distinct characters — list(set(text)) has an "
        "order that changes from one Python process to the next (hash randomization), so saved ids "
        "would mean other characters after a restart"
    )
    assert gpt.CharTokenizer(text).encode("the harbour") == tok.encode("the harbour"), (
        "two tokenizers built from the same text give different ids: build the vocabulary "
        "deterministically (e.g. sorted characters), or a saved model cannot be reused"
    )


# ---------------------------------------------------------------- ch10.2 get_batch (repair)


@pytest.mark.task("ch10.2")
@pytest.mark.points(2)
def test_get_batch_targets_are_the_next_tokens():
    data = torch.arange(100)  # every token is its own position, so y should be x + 1
    x, y = gpt.get_batch(data, 8, 6, torch.Generator().manual_seed(1))
    assert x.shape == y.shape == (6, 8), (
        f"get_batch(data, block_size=8, batch_size=6) returned x {tuple(x.shape)}, y {tuple(y.shape)}; expected (6, 8) each"
    )
    assert torch.equal(x[:, 1:], x[:, :-1] + 1), (
        "each row of x should be a contiguous window of data"
    )
    assert torch.equal(y, x + 1), (
        f"on data = arange(100) get_batch gave x[0] = {x[0].tolist()} and y[0] = {y[0].tolist()}: "
        "y[b, t] must be the token that FOLLOWS x[b, t], i.e. y = data[i+1 : i+block+1]; "
        "without the shift the model is asked to copy its input, not to predict"
    )


@pytest.mark.task("ch10.2")
def test_get_batch_uses_the_generator_and_keeps_the_shift():
    data = torch.arange(1000)
    a = gpt.get_batch(data, 16, 4, torch.Generator().manual_seed(3))
    b = gpt.get_batch(data, 16, 4, torch.Generator().manual_seed(3))
    c = gpt.get_batch(data, 16, 4, torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), (
        "get_batch with two generators seeded alike returned different batches: draw the window "
        "starts with torch.randint(..., generator=generator)"
    )
    assert not torch.equal(a[0], c[0]), (
        "different generator seeds gave the same windows: use the generator"
    )
    assert torch.equal(a[1], a[0] + 1), (
        "y is not x shifted by one token (on data = arange, y should equal x + 1): the targets "
        "must be the next tokens"
    )


# ---------------------------------------------------------------- ch10.3 check_targets


@pytest.mark.task("ch10.3")
@pytest.mark.points(2)
def test_check_targets_names_the_shift():
    data = torch.arange(500)
    gen = torch.Generator().manual_seed(0)
    starts = torch.randint(400, (5,), generator=gen)
    x = torch.stack([data[i : i + 12] for i in starts.tolist()])
    for s in (1, 0, 2):
        y = torch.stack([data[i + s : i + s + 12] for i in starts.tolist()])
        r = gpt.check_targets(x, y)
        assert (r.ok, r.shift) == (s == 1, s), (
            f"check_targets(x, y) with y[:, t] == x[:, t+{s}] returned ok={r.ok}, shift={r.shift}; "
            f"expected ok={s == 1}, shift={s}: compare y with x shifted by each offset, in every row"
        )


@pytest.mark.task("ch10.3")
def test_check_targets_catches_the_copy_batch():
    data = torch.tensor([ord(c) for c in corpus()])  # corpus text as ids, repeated letters included
    x, y = copy_batch(data, 32, 16, torch.Generator().manual_seed(0))
    r = gpt.check_targets(x, y)
    assert not r.ok and r.shift == 0, (
        f"check_targets on a batch whose targets are the inputs (y == x) returned ok={r.ok}, "
        f"shift={r.shift}; expected ok=False, shift=0 — that batch teaches copying, not prediction"
    )
    r = gpt.check_targets(x[:, :-1], x[:, 1:])  # a real next-token batch of the same windows
    assert r.ok and r.shift == 1, (
        f"check_targets on a correct next-token batch of corpus text returned ok={r.ok}, shift={r.shift}"
    )


# ---------------------------------------------------------------- ch10.4 attention


def attn_module(n_embd=8, n_head=2, block_size=8, seed=0):
    torch.manual_seed(seed)
    return gpt.CausalSelfAttention(n_embd, n_head, block_size).eval()  # eval: dropout, if any, off


@pytest.mark.task("ch10.4")
def test_attention_keeps_the_shape():
    m = attn_module()
    out = m(torch.randn(3, 5, 8))
    assert out.shape == (3, 5, 8), (
        f"CausalSelfAttention(8, 2, block_size=8) on (3, 5, 8) returned {tuple(out.shape)}; expected "
        "(3, 5, 8) — a sequence shorter than block_size must work (slice the mask to T x T)"
    )


@pytest.mark.task("ch10.4")
@pytest.mark.points(2)
def test_attention_never_sees_the_future():
    m = attn_module()  # T == n_embd == block_size: a swapped axis still runs
    x = torch.randn(2, 8, 8)
    x2 = x.clone()
    x2[:, 5:] += torch.randn(2, 3, 8)
    out, out2 = m(x), m(x2)
    moved = (out[:, :5] - out2[:, :5]).abs().max().item()
    assert moved < 1e-5, (
        f"changing only positions 5..7 of the input changed outputs at positions 0..4 by up to {moved:.2e}: "
        "information flows from the future; mask the scores with -inf above the diagonal before the softmax"
    )
    assert (out[:, 5:] - out2[:, 5:]).abs().max().item() > 1e-4, (
        "changing positions 5..7 did not change their own outputs"
    )
    x = torch.randn(1, 8, 8, requires_grad=True)
    m(x)[0, 3].sum().backward()
    future = x.grad[0, 4:].abs().max().item()
    past = x.grad[0, 0].abs().max().item()
    assert future == 0.0, (
        f"the gradient of output position 3 reaches input positions 4..7 (max |grad| {future:.2e}): "
        "the attention weights of future positions must be exactly zero"
    )
    assert past > 0.0, (
        "output position 3 does not depend on input position 0 at all: attention should mix every "
        "position <= t, not only t itself"
    )


@pytest.mark.task("ch10.4")
def test_attention_on_a_prefix_equals_the_prefix_of_attention():
    m = attn_module(n_embd=12, n_head=3, block_size=12, seed=2)
    x = torch.randn(2, 12, 12)
    full = m(x)
    for t in (1, 4, 9):
        part = m(x[:, :t])
        assert torch.allclose(part, full[:, :t], atol=1e-5), (
            f"running attention on the first {t} positions gave different outputs from the first {t} "
            "positions of the full run: each output should depend only on positions <= t — check that "
            "heads are split with view + transpose (not a reshape) and the mask is sliced to T x T"
        )


# ---------------------------------------------------------------- ch10.5 block


@pytest.mark.task("ch10.5")
@pytest.mark.points(2)
def test_block_is_causal_and_mixes_the_past():
    torch.manual_seed(0)
    blk = gpt.Block(8, 2, 8).eval()
    x = torch.randn(2, 8, 8)
    out = blk(x)
    assert out.shape == x.shape, f"Block(8, 2, 8) on (2, 8, 8) returned {tuple(out.shape)}"
    x2 = x.clone()
    x2[:, 6:] += 1.0
    moved = (blk(x2)[:, :6] - out[:, :6]).abs().max().item()
    assert moved < 1e-5, (
        f"changing positions 6..7 moved Block outputs at positions 0..5 by {moved:.2e}: the block leaks the future"
    )
    x3 = x.clone()
    x3[:, 0] += torch.randn(2, 8)  # not a constant: LayerNorm would remove a uniform shift
    assert (blk(x3)[:, 7] - out[:, 7]).abs().max().item() > 1e-4, (
        "changing position 0 does not change the Block's output at position 7: the block should "
        "contain causal self-attention, which mixes in every earlier position"
    )


# ---------------------------------------------------------------- ch10.6 GPT


def small_gpt(vocab=16, block=16, n_layer=2, n_head=4, n_embd=16, seed=0):
    torch.manual_seed(seed)
    return gpt.GPT(vocab, block, n_layer, n_head, n_embd).eval()  # eval: dropout, if any, off


@pytest.mark.task("ch10.6")
def test_gpt_returns_logits_and_the_cross_entropy():
    model = small_gpt()
    idx = torch.randint(16, (3, 10))
    logits, loss = model(idx)
    assert logits.shape == (3, 10, 16) and loss is None, (
        f"GPT(vocab=16, ...)(idx (3, 10)) returned logits {tuple(logits.shape)} and loss {loss}; "
        "expected (3, 10, 16) and None when no targets are given"
    )
    targets = torch.randint(16, (3, 10))
    logits, loss = model(idx, targets)
    want = F.cross_entropy(logits.reshape(-1, 16), targets.reshape(-1))
    assert loss is not None and torch.allclose(loss, want, atol=1e-5), (
        f"the loss given targets is {loss}, but F.cross_entropy over all (B*T) positions of the "
        f"returned logits is {want.item():.4f}: flatten logits to (B*T, V) and targets to (B*T,)"
    )


@pytest.mark.task("ch10.6")
@pytest.mark.points(2)
def test_gpt_loss_at_init_is_about_ln_vocab():
    vocab = 48
    model = small_gpt(vocab=vocab, block=32, n_embd=32)
    idx, targets = torch.randint(vocab, (8, 32)), torch.randint(vocab, (8, 32))
    _, loss = model(idx, targets)
    assert abs(loss.item() - math.log(vocab)) < 0.5, (
        f"an untrained GPT over {vocab} tokens has loss {loss.item():.3f}, but ln({vocab}) = {math.log(vocab):.3f}: "
        "at initialization every token should be about equally likely; a much larger loss means the "
        "initial logits are too large (initialize the weights small)"
    )


@pytest.mark.task("ch10.6")
def test_gpt_never_sees_future_tokens_and_knows_positions():
    model = small_gpt()
    idx = torch.randint(16, (2, 16))
    idx2 = idx.clone()
    idx2[:, 10:] = (idx2[:, 10:] + 3) % 16
    moved = (model(idx)[0][:, :10] - model(idx2)[0][:, :10]).abs().max().item()
    assert moved < 1e-5, (
        f"changing tokens 10..15 moved the logits at positions 0..9 by {moved:.2e}: the model reads the "
        "future, so its training loss measures copying, not prediction"
    )
    same = torch.full((1, 16), 5)
    logits, _ = model(same)
    spread = (logits[0] - logits[0, :1]).abs().max().item()
    assert spread > 1e-4, (
        "on a sequence of one repeated token the GPT gives identical logits at every position: "
        "add a learned position embedding to the token embedding, or order is invisible"
    )


# ---------------------------------------------------------------- ch10.7 generate


@pytest.mark.task("ch10.7")
def test_generate_extends_and_is_reproducible():
    model = small_gpt(block=8).eval()
    idx = torch.tensor([[1, 2, 3], [4, 5, 6]])
    out = gpt.generate(model, idx, 20, 1.0, torch.Generator().manual_seed(0))
    assert out.shape == (2, 23) and torch.equal(out[:, :3], idx), (
        f"generate(model, idx (2, 3), 20, ...) returned {tuple(out.shape)} starting {out[:, :3].tolist()}; "
        "expected (2, 23) beginning with idx — 20 tokens past block_size=8 need the context cropped to the last 8"
    )
    again = gpt.generate(model, idx, 20, 1.0, torch.Generator().manual_seed(0))
    other = gpt.generate(model, idx, 20, 1.0, torch.Generator().manual_seed(1))
    assert torch.equal(out, again), (
        "two calls of generate with generators seeded alike gave different tokens: draw every sample with the generator"
    )
    assert not torch.equal(out, other), (
        "generate gave the same 40 tokens for two different generator seeds at temperature 1: it should sample, not take the argmax"
    )


@pytest.mark.task("ch10.7")
@pytest.mark.points(2)
def test_generate_samples_from_the_softmax_of_the_last_position():
    table = torch.tensor(
        [[2.0, 1.0, 0.0, -1.0], [0.0, 0.0, 1.5, 0.5], [1.0, -1.0, 0.0, 2.0], [0.0] * 4]
    )
    model = MarkovModel(table)
    n = 10000
    for temperature in (1.0, 0.5):
        idx = torch.tensor([[0, 1]]).repeat(n, 1)  # last token 1: the next token follows table[1]
        out = gpt.generate(model, idx, 1, temperature, torch.Generator().manual_seed(0))
        freq = torch.bincount(out[:, -1], minlength=4).float() / n
        want = F.softmax(table[1] / temperature, dim=-1)
        gap = (freq - want).abs().max().item()
        assert gap < 0.03, (
            f"after the prompt [0, 1] on a fixed model, generate at temperature {temperature} drew tokens "
            f"with frequencies {[round(v, 3) for v in freq.tolist()]}, but softmax(logits[:, -1] / temperature) "
            f"is {[round(v, 3) for v in want.tolist()]}: sample from the last position's logits divided by the temperature"
        )


@pytest.mark.task("ch10.7")
@pytest.mark.points(2)
def test_generation_survives_a_checkpoint_round_trip(tmp_path):
    model = small_gpt(vocab=16, block=8, seed=3)
    with torch.no_grad():  # make it a model worth saving: not the initial weights
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.eval()
    path = tmp_path / "ckpt.pt"
    torch.save(model.state_dict(), path)
    fresh = small_gpt(vocab=16, block=8, seed=99)
    fresh.load_state_dict(torch.load(path))
    fresh.eval()
    idx = torch.tensor([[1, 2]])
    a = gpt.generate(model, idx, 30, 0.8, torch.Generator().manual_seed(5))
    b = gpt.generate(fresh, idx, 30, 0.8, torch.Generator().manual_seed(5))
    assert torch.equal(a, b), (
        "a GPT saved with state_dict and loaded into a freshly built GPT generates different text under "
        "the same generator seed: some weights are not registered (keep blocks in nn.ModuleList, "
        "buffers with register_buffer) or generation depends on state outside the model"
    )


# ---------------------------------------------------------------- ch10.8 train_gpt


@pytest.mark.task("ch10.8")
@pytest.mark.points(3)
@pytest.mark.timeout(120)
def test_training_beats_the_unigram_entropy():
    text = corpus()
    result = trained(False)
    h1, v = unigram_entropy(text), result.tokenizer.vocab_size
    losses = result.train_losses
    assert len(losses) == SMALL["steps"], (
        f"train_gpt(steps={SMALL['steps']}) recorded {len(losses)} losses"
    )
    assert abs(losses[0] - math.log(v)) < 0.5, (
        f"the first training loss is {losses[0]:.3f}, not about ln(vocab) = {math.log(v):.3f}: initialize small"
    )
    true_val = next_token_loss(result.model, result.val_data, SMALL["block_size"])
    assert true_val < h1 - 0.3 and result.val_loss < h1 - 0.3, (
        f"after {SMALL['steps']} steps the validation loss is {result.val_loss:.3f} (reported) / {true_val:.3f} "
        f"(on true next tokens), but the unigram entropy of the corpus is {h1:.3f}: the model has not learned "
        "to use its context — check the batches (shift), the optimizer step and zero_grad"
    )
    assert abs(result.val_loss - true_val) < 0.3, (
        f"train_gpt reports val_loss {result.val_loss:.3f}, but the model's loss on the true next tokens of "
        f"val_data is {true_val:.3f}: evaluate on the validation split with next-token targets"
    )


@pytest.mark.task("ch10.8")
@pytest.mark.points(2)
@pytest.mark.timeout(120)
def test_a_near_zero_loss_from_copy_targets_is_not_a_result():
    result = trained(True)
    v = result.tokenizer.vocab_size
    final = sum(result.train_losses[-10:]) / 10
    assert final < 0.1 and result.val_loss < 0.2, (
        f"trained with batch_fn whose targets equal the inputs, train_gpt ended at train loss {final:.4f}, "
        f"val loss {result.val_loss:.4f}; copying the current token is trivial, so both should collapse "
        "towards 0 — train_gpt must use batch_fn for every batch, training and validation"
    )
    true_val = next_token_loss(result.model, result.val_data, SMALL["block_size"])
    assert true_val > math.log(v), (
        f"the copy-trained model scores {true_val:.3f} on the true next tokens; it should be worse than a "
        f"uniform guess (ln {v} = {math.log(v):.3f}) — it predicts the current character with confidence"
    )
