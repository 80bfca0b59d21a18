"""Hidden tests for ch10: other sizes, seeds, data and edge cases than the public ones.
Messages state the violated property, not the test."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from exercises.ch10.test_gpt import (  # helpers shared with the public twin
    next_token_loss,
    unigram_entropy,
)
from harness.target import chapter_module, course_file

gpt = chapter_module("ch10", "gpt")


def corpus() -> str:
    return course_file("data/ch10_corpus.txt").read_text()


class TableModel(nn.Module):
    """Fixed next-token logits: position t predicts from table[idx[:, t]]."""

    def __init__(self, table, block_size):
        super().__init__()
        self.unused = nn.Parameter(torch.zeros(()))  # so model.parameters() gives a device
        self.register_buffer("table", table)
        self.block_size = block_size

    def forward(self, idx, targets=None):
        if idx.shape[1] > self.block_size:
            raise ValueError(f"{idx.shape[1]} positions exceed block_size {self.block_size}")
        return self.table[idx], None


class WindowModel(nn.Module):
    """Fixed logits that depend on the context: every position predicts (first token of the
    window it was given + 1) mod vocab, almost surely."""

    def __init__(self, vocab, block_size):
        super().__init__()
        self.unused = nn.Parameter(torch.zeros(()))  # so model.parameters() gives a device
        self.vocab, self.block_size = vocab, block_size

    def forward(self, idx, targets=None):
        if idx.shape[1] > self.block_size:
            raise ValueError(f"{idx.shape[1]} positions exceed block_size {self.block_size}")
        logits = 40.0 * F.one_hot((idx[:, :1] + 1) % self.vocab, self.vocab).float()
        return logits.repeat(1, idx.shape[1], 1), None


# ---------------------------------------------------------------- ch10.1


@pytest.mark.task("ch10.1")
def test_tokenizer_on_other_text():
    text = "Zebra\nab ba, \u00e9t\u00e9 \u20ac5!\n"
    tok = gpt.CharTokenizer(text)
    assert tok.vocab_size == len(set(text)), (
        "vocab_size must equal the number of distinct characters"
    )
    ids = tok.encode(text)
    assert all(0 <= i < tok.vocab_size for i in ids), "ids must lie in 0 .. vocab_size-1"
    assert tok.decode(ids) == text, (
        "decode(encode(text)) must give back the text, newlines and non-ASCII included"
    )
    assert tok.encode("".join(sorted(set(text)))) == list(range(tok.vocab_size)), (
        "ids must follow the sorted order of the distinct characters, so that they are the same in every process"
    )
    assert tok.encode("") == [] and tok.decode([]) == "", (
        "the empty string must encode to [] and back"
    )
    with pytest.raises((KeyError, ValueError)):
        tok.encode("q")  # not in the text: must not be mapped silently to some other character


# ---------------------------------------------------------------- ch10.2


@pytest.mark.task("ch10.2")
def test_targets_follow_inputs_in_arbitrary_data():
    gen = torch.Generator().manual_seed(11)
    data = torch.randperm(300, generator=gen)  # distinct tokens in no particular order
    successor = {int(a): int(b) for a, b in zip(data[:-1], data[1:])}
    x, y = gpt.get_batch(data, 10, 7, torch.Generator().manual_seed(2))
    assert x.shape == y.shape == (7, 10), "x and y must both be (batch_size, block_size)"
    ok = all(successor.get(int(a)) == int(b) for a, b in zip(x.flatten(), y.flatten()))
    assert ok, (
        "some target is not the token that follows its input in the data: y must be x shifted by one"
    )
    x, y = gpt.get_batch(data[:9], 8, 5, torch.Generator().manual_seed(0))
    assert torch.equal(x, data[:8].repeat(5, 1)) and torch.equal(y, data[1:9].repeat(5, 1)), (
        "when data holds exactly block_size + 1 tokens there is one window: x = data[:-1], y = data[1:]"
    )


@pytest.mark.task("ch10.2")
def test_every_window_can_be_drawn():
    data = torch.arange(20)
    x, y = gpt.get_batch(data, 4, 3000, torch.Generator().manual_seed(0))
    assert torch.equal(y, x + 1), "targets must be the next tokens"
    assert int(x[:, 0].min()) == 0 and int(y[:, -1].max()) == 19, (
        "over many draws, windows never start at the first token or never reach the last token: "
        "every start 0 .. len(data) - block_size - 1 must be possible"
    )


# ---------------------------------------------------------------- ch10.3


@pytest.mark.task("ch10.3")
def test_check_targets_on_past_mixed_and_unrelated_targets():
    data = torch.arange(1000)
    starts = [5, 300, 41, 700]
    x = torch.stack([data[i : i + 16] for i in starts])
    r = gpt.check_targets(x, torch.stack([data[i - 1 : i + 15] for i in starts]))
    assert (r.ok, r.shift) == (False, -1), (
        "targets equal to the previous token must give ok=False, shift=-1"
    )
    y = x + 1
    y[2] = x[2]  # one row is not shifted
    r = gpt.check_targets(x, y)
    assert not r.ok and r.shift is None, (
        "when one row of the batch is not shifted the batch is not a next-token batch: every row must agree"
    )
    gen = torch.Generator().manual_seed(0)
    r = gpt.check_targets(x, torch.randint(1000, x.shape, generator=gen))
    assert not r.ok and r.shift is None, "unrelated targets must give ok=False, shift=None"


@pytest.mark.task("ch10.3")
def test_check_targets_on_short_and_text_windows():
    r = gpt.check_targets(torch.tensor([[3, 9], [4, 2]]), torch.tensor([[9, 7], [2, 2]]))
    assert r.ok and r.shift == 1, "a correct next-token batch with block_size 2 must be recognised"
    text = corpus()
    data = torch.tensor([ord(c) for c in text])
    starts = [0, 1000, 5000, 9000, 12000]
    x = torch.stack([data[i : i + 40] for i in starts])
    for s in (1, 0, 3):
        r = gpt.check_targets(x, torch.stack([data[i + s : i + s + 40] for i in starts]))
        assert (r.ok, r.shift) == (s == 1, s), (
            "on windows of real text the reported shift must be the offset between x and y"
        )


# ---------------------------------------------------------------- ch10.4


@pytest.mark.task("ch10.4")
def test_attention_gradient_is_causal_everywhere():
    torch.manual_seed(4)
    m = gpt.CausalSelfAttention(16, 4, 16).eval()  # eval: dropout, if any, off
    x = torch.randn(1, 16, 16, requires_grad=True)
    out = m(x)
    for t in range(16):
        (g,) = torch.autograd.grad(out[0, t].sum(), x, retain_graph=True)
        if t < 15:
            assert g[0, t + 1 :].abs().max().item() == 0.0, (
                "an output position receives gradient from a later input position: attention leaks the future"
            )
        assert g[0, 0].abs().max().item() > 0, "an output position ignores the first input position"
    one = gpt.CausalSelfAttention(8, 1, 8)(torch.randn(2, 1, 8))
    assert one.shape == (2, 1, 8), "a single head and a single position must work"


@pytest.mark.task("ch10.4")
def test_attention_keeps_batch_rows_apart():
    torch.manual_seed(5)
    m = gpt.CausalSelfAttention(12, 3, 12).eval()
    x = torch.randn(3, 12, 12)
    x2 = x.clone()
    x2[1:] = torch.randn(2, 12, 12)
    gap = (m(x)[0] - m(x2)[0]).abs().max().item()
    assert gap < 1e-5, (
        "changing one sequence of the batch changes another: attention must mix positions, never batch rows"
    )


# ---------------------------------------------------------------- ch10.5


@pytest.mark.task("ch10.5")
def test_block_gradient_is_causal_and_prefix_stable():
    torch.manual_seed(6)
    blk = gpt.Block(12, 3, 12).eval()
    x = torch.randn(2, 12, 12, requires_grad=True)
    out = blk(x)
    (g,) = torch.autograd.grad(out[:, 4].sum(), x)
    assert g[:, 5:].abs().max().item() == 0.0, (
        "a Block output position receives gradient from later positions"
    )
    assert g[:, :4].abs().max().item() > 0, "a Block output position ignores earlier positions"
    assert torch.allclose(blk(x[:, :7]), out[:, :7], atol=1e-5), (
        "a Block applied to a prefix must give the prefix of its output on the full sequence"
    )


@pytest.mark.task("ch10.5")
def test_block_residual_stream_carries_its_input():
    torch.manual_seed(9)
    blk = gpt.Block(16, 4, 16).eval()
    x = torch.randn(2, 10, 16)
    out = blk(x)
    shifted = blk(x + 3.0)
    gap = (shifted - (out + 3.0)).abs().max().item()
    assert gap < 1e-3, (
        "adding a constant to every input entry must add the same constant to the Block's output: "
        "in a pre-norm block each branch sees only a LayerNorm of the stream (which removes the "
        "constant) and the residual path carries the input through untouched — no LayerNorm after "
        f"the additions, no branch without its residual (max deviation {gap:.2e})"
    )


# ---------------------------------------------------------------- ch10.6


@pytest.mark.task("ch10.6")
def test_square_gpt_is_causal_and_calibrated_at_init():
    torch.manual_seed(7)
    model = gpt.GPT(24, 24, 1, 2, 24).eval()  # vocab == block == n_embd
    idx = torch.randint(24, (4, 24))
    logits, _ = model(idx)
    for cut in (1, 12, 23):
        idx2 = idx.clone()
        idx2[:, cut:] = (idx2[:, cut:] + 7) % 24
        moved = (model(idx2)[0][:, :cut] - logits[:, :cut]).abs().max().item()
        assert moved < 1e-5, (
            "logits at a position change when only later tokens change: the model sees the future"
        )
    torch.manual_seed(8)
    big = gpt.GPT(100, 16, 2, 4, 32).eval()
    _, loss = big(torch.randint(100, (8, 16)), torch.randint(100, (8, 16)))
    assert abs(loss.item() - math.log(100)) < 0.5, (
        "the loss at initialization must be close to ln(vocab_size)"
    )


@pytest.mark.task("ch10.6")
def test_every_layer_is_registered_and_trained():
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    one, three = gpt.GPT(20, 8, 1, 2, 16), gpt.GPT(20, 8, 3, 2, 16)
    assert count(three) > count(one), (
        "a GPT with 3 layers has no more parameters than one with 1: the blocks are not registered as submodules"
    )
    assert len(three.state_dict()) > len(one.state_dict()), (
        "the state_dict does not grow with n_layer"
    )
    _, loss = three(torch.randint(20, (2, 8)), torch.randint(20, (2, 8)))
    loss.backward()
    silent = [n for n, p in three.named_parameters() if p.grad is None]
    assert not silent, f"parameters the loss never reaches: {silent[:4]}"


# ---------------------------------------------------------------- ch10.7


@pytest.mark.task("ch10.7")
def test_tiny_temperature_is_greedy():
    gen = torch.Generator().manual_seed(3)
    table = torch.randn(6, 6, generator=gen)
    model = TableModel(table, 5)
    idx = torch.tensor([[0], [1], [2], [3], [4], [5]]).repeat(50, 1)
    out = gpt.generate(model, idx, 3, 1e-3, torch.Generator().manual_seed(1))
    greedy = idx.clone()
    for _ in range(3):
        greedy = torch.cat([greedy, table[greedy[:, -1]].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(out, greedy), (
        "as the temperature goes to 0, sampling must become the argmax of the last position's logits"
    )


@pytest.mark.task("ch10.7")
@pytest.mark.points(2)
def test_each_row_samples_from_its_own_last_token_past_the_block():
    table = torch.tensor([[0.0, 3.0, 0.0], [0.0, 0.0, 3.0], [3.0, 0.0, 0.0]]) * 0.5
    model = TableModel(table, 4)
    n = 6000
    idx = torch.cat(
        [torch.zeros(n, 6, dtype=torch.long), torch.full((n, 6), 2)]
    )  # (2n, 6) > block_size
    idx[:n, -1] = 1  # first half ends in token 1, second half in token 2
    start = idx.clone()
    try:
        out = gpt.generate(model, idx, 2, 1.0, torch.Generator().manual_seed(9))
    except ValueError as exc:
        raise AssertionError(
            f"generation on a prompt longer than block_size failed ({exc}): crop the context"
        ) from None
    assert torch.equal(idx, start), "generate must not modify the prompt tensor it was given"
    for rows, last in ((slice(0, n), 1), (slice(n, 2 * n), 2)):
        freq = torch.bincount(out[rows, 6], minlength=3).float() / n
        want = F.softmax(table[last], -1)
        assert (freq - want).abs().max().item() < 0.03, (
            "the first generated token does not follow the softmax of the logits at the last prompt position"
        )


@pytest.mark.task("ch10.7")
def test_generation_reads_the_last_block_size_tokens():
    model = WindowModel(6, 4)
    for prompt in ([[5, 0, 3, 1, 4, 2], [2, 2, 0, 5, 1, 3]], [[3, 1], [0, 4]]):
        idx = torch.tensor(prompt)
        out = gpt.generate(model, idx, 7, 1.0, torch.Generator().manual_seed(0))
        want = idx.clone()
        for _ in range(7):
            window = want[:, -4:]  # the whole sequence while it is shorter than block_size
            want = torch.cat([want, (window[:, :1] + 1) % 6], dim=1)
        assert torch.equal(out, want), (
            "generate must give the model the last block_size tokens of the sequence as its context "
            "(all of it while shorter): a model whose prediction depends on the oldest token of that "
            "window was fed a different window"
        )


# ---------------------------------------------------------------- ch10.8


@pytest.mark.task("ch10.8")
@pytest.mark.points(2)
@pytest.mark.timeout(120)
def test_another_configuration_learns_from_context():
    text = corpus()
    cfg = dict(steps=150, block_size=16, batch_size=24, n_layer=1, n_head=2, n_embd=32, lr=4e-3)
    result = gpt.train_gpt(text, seed=1, **cfg)
    h1 = unigram_entropy(text)
    true_val = next_token_loss(result.model, result.val_data, 16)
    tail = len(text) - int(0.9 * len(text))  # 90% of the tokens is not a whole number here
    assert abs(len(result.val_data) - tail) <= 1 and torch.equal(
        result.val_data.long(),
        torch.tensor(result.tokenizer.encode(text[-len(result.val_data) :]), dtype=torch.long),
    ), "val_data must be the last 10% of the tokens (rounded either way)"
    assert true_val < h1 - 0.3, (
        "the trained model's loss on true next tokens of the validation split is not clearly below "
        "the unigram entropy of the text: it has not learned to use context"
    )
    assert abs(result.val_loss - true_val) < 0.3, (
        "the reported val_loss disagrees with the model's next-token loss on val_data"
    )


@pytest.mark.task("ch10.8")
@pytest.mark.timeout(60)
def test_training_is_deterministic_per_seed():
    text = corpus()[:3000]
    cfg = dict(steps=12, block_size=16, batch_size=8, n_layer=1, n_head=2, n_embd=16)
    a = gpt.train_gpt(text, seed=5, **cfg).train_losses
    torch.manual_seed(123)  # global state before the call must not matter
    b = gpt.train_gpt(text, seed=5, **cfg).train_losses
    c = gpt.train_gpt(text, seed=6, **cfg).train_losses
    assert a == b, (
        "two train_gpt runs with the same seed differ: seed the model construction and the batch generator from seed"
    )
    assert a != c, (
        "two train_gpt runs with different seeds are identical: the seed must reach the model and the batches"
    )


@pytest.mark.task("ch10.8")
@pytest.mark.timeout(60)
def test_batches_come_from_the_right_split():
    text = corpus()[:4000]
    calls = []

    def recording_batch(data, block_size, batch_size, generator=None):
        calls.append(data.detach().clone())
        starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
        x = torch.stack([data[i : i + block_size] for i in starts.tolist()])
        y = torch.stack([data[i + 1 : i + block_size + 1] for i in starts.tolist()])
        return x, y

    cfg = dict(steps=6, block_size=8, batch_size=4, n_layer=1, n_head=2, n_embd=16)
    result = gpt.train_gpt(text, seed=2, batch_fn=recording_batch, **cfg)
    tok = result.tokenizer
    ids = torch.tensor(tok.encode(text), dtype=torch.long)
    n_train = int(0.9 * len(ids))
    train, val = ids[:n_train], ids[n_train:]
    same = lambda a, b: a.shape == b.shape and torch.equal(a.long(), b)  # noqa: E731
    assert len(calls) > 6 and all(same(d, train) for d in calls[:6]), (
        "every training step must draw its batch with batch_fn from the training split (the first 90% of the tokens)"
    )
    assert all(same(d, val) for d in calls[6:]), (
        "after training, val_loss must be measured on batches that batch_fn draws from the validation "
        "split (the last 10% of the tokens), not the training split"
    )
