"""Public tests for ch04 — run with `pytest exercises/ch04` (add `--impl solutions` to
see the reference pass)."""

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness.target import chapter_module

md = chapter_module("ch04", "modules")


def accuracy(model, X, y):
    with torch.no_grad():
        return (model(X).argmax(1) == y).float().mean().item()


def book_run(make_model, epochs=200):
    """The book's run: XOR data from seed 0, the model built right after, Adam lr 1e-2,
    full batch. Returns (model, losses, val accuracies after each epoch, data)."""
    Xtr, ytr, Xva, yva = md.xor_data(2000, 0)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses, accs = [], []
    for _ in range(epochs):
        loss = F.cross_entropy(model(Xtr), ytr)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        accs.append(accuracy(model, Xva, yva))
    return model, losses, accs, (Xva, yva)


class PlainBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.linear(x))


class PlainListEncoder(nn.Module):
    """The chapter's broken encoder, kept here so the inspection tests have a fixed patient."""

    def __init__(self, d_in=2, hidden=16, depth=3):
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.blocks = [PlainBlock(hidden) for _ in range(depth)]

    def forward(self, x):
        h = torch.relu(self.stem(x))
        for block in self.blocks:
            h = block(h)
        return h


class PlainListClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = PlainListEncoder()
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.encoder(x))


def unquote(paths):
    return sorted(p.replace("'", "").replace('"', "") for p in paths)


# ---------------------------------------------------------------- ch04.1 repair


@pytest.mark.task("ch04.1")
def test_every_block_is_registered():
    model = md.Classifier()
    n = sum(p.numel() for p in model.parameters())
    saved = sum(t.numel() for t in model.state_dict().values())
    assert n == 898, (
        f"Classifier() exposes {n} parameters through parameters(); the network uses 898 "
        "(stem 48 + three 16x16 blocks 816 + head 34). 82 means only stem and head are "
        "registered: a plain Python list hides the blocks; use nn.ModuleList"
    )
    assert saved == 898, (
        f"state_dict() holds {saved} numbers, the network uses 898: a checkpoint would "
        "silently drop whatever is not registered"
    )


@pytest.mark.task("ch04.1")
@pytest.mark.points(3)
def test_the_books_run_trains_and_reloads_every_block():
    model, losses, accs, (Xva, yva) = book_run(md.Classifier)
    assert losses[0] == pytest.approx(0.6964, abs=1e-4) and accs[0] == pytest.approx(
        0.5125, abs=1e-4
    ), f"epoch 0: loss {losses[0]:.4f}, val {accs[0]:.4f}; the book: 0.6964 and 0.5125"
    assert accs[-1] == pytest.approx(0.995, abs=1e-4), (
        f"after 200 epochs of Adam the Classifier scores {accs[-1]:.4f} (the book: 0.995 with "
        "registered blocks, 0.9575 when the optimizer never sees the blocks because they sit "
        "in a plain list)"
    )
    fresh = md.Classifier()
    fresh.load_state_dict(model.state_dict())
    reloaded = accuracy(fresh, Xva, yva)
    assert reloaded == pytest.approx(accs[-1], abs=1e-6), (
        f"a fresh Classifier loaded from the trained state_dict scores {reloaded:.4f}, the "
        f"trained one {accs[-1]:.4f}: the blocks were not in the state_dict, so the reload "
        "kept fresh random blocks while reporting all keys matched"
    )


@pytest.mark.task("ch04.1")
def test_to_float64_moves_the_blocks():
    model = md.Classifier().to(torch.float64)
    x = torch.randn(5, 2, dtype=torch.float64)
    try:
        out = model(x)
    except RuntimeError as exc:
        raise AssertionError(
            f"Classifier().to(torch.float64)(x) failed ({str(exc)[:80]}): .to() converts only "
            "registered submodules, so blocks in a plain list stay float32"
        ) from None
    assert out.dtype == torch.float64, f"the float64 model returned {out.dtype}"


# ---------------------------------------------------------------- ch04.2 inspect


@pytest.mark.task("ch04.2")
@pytest.mark.points(3)
def test_unregistered_state_finds_the_books_hidden_blocks():
    model, losses, accs, (Xva, yva) = book_run(PlainListClassifier)
    found = md.unregistered_state(model)
    want = ["encoder.blocks[0]", "encoder.blocks[1]", "encoder.blocks[2]"]
    assert unquote(found) == want, (
        f"unregistered_state(model with blocks in a plain list) returned {found}, expected "
        f"{want}: look through each registered module's plain attributes (vars(module)) for "
        "modules and tensors, also inside lists, tuples and dicts; report an unregistered "
        "object once and do not search inside it"
    )
    # The book's numbers for this broken program: they do not depend on your code.
    facts = {
        "trainable parameters": (sum(p.numel() for p in model.parameters()), 82),
        "epoch 0 loss": (losses[0], 0.6964),
        "epoch 0 val": (accs[0], 0.5125),
        "epoch 199 loss": (losses[-1], 0.1908),
        "epoch 199 val": (accs[-1], 0.9575),
    }
    fresh = PlainListClassifier()
    result = fresh.load_state_dict(model.state_dict())
    facts["reloaded val"] = (accuracy(fresh, Xva, yva), 0.5125)
    for name, (got, book) in facts.items():
        assert got == pytest.approx(book, abs=1e-4), (
            f"the plain-list run gave {name} {got:.4f}, the book {book}: this torch build "
            "does not reproduce the chapter's numbers"
        )
    assert not result.missing_keys and not result.unexpected_keys, (
        "load_state_dict should report all keys matched: the blocks are not keys at all"
    )


@pytest.mark.task("ch04.2")
def test_unregistered_state_is_empty_for_a_sound_model():
    model = nn.Sequential(
        nn.Linear(4, 4), nn.BatchNorm1d(4), nn.ModuleDict({"a": nn.Linear(4, 4)}), nn.ReLU()
    )
    found = md.unregistered_state(model)
    assert found == [], (
        f"unregistered_state reported {found} for a model whose modules, parameters and "
        "buffers are all registered: skip nn.Module's own bookkeeping (_parameters, "
        "_buffers, _modules, hooks) and report only plain attributes"
    )


@pytest.mark.task("ch04.2")
def test_unregistered_state_finds_a_tensor_that_should_be_a_buffer():
    class Scaler(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.scale = torch.ones(3)  # a plain attribute: not saved, not moved by .to()

        def forward(self, x):
            return self.lin(x) * self.scale

    model = nn.Sequential(Scaler())
    found = md.unregistered_state(model)
    assert found == ["0.scale"], (
        f"unregistered_state(Sequential(Scaler())) returned {found}, expected ['0.scale']: a "
        "tensor kept as a plain attribute is neither a parameter nor a buffer; prefix each "
        "name with the registered module's path from named_modules()"
    )


# ---------------------------------------------------------------- ch04.3 inspect


@pytest.mark.task("ch04.3")
@pytest.mark.points(2)
def test_coverage_after_replacing_the_head():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model[2] = nn.Linear(4, 4)  # new head, created after the optimizer
    missing, foreign = md.optimizer_coverage(model, opt)
    assert sorted(missing) == ["2.bias", "2.weight"], (
        f"after replacing layer 2, optimizer_coverage reported missing={missing}: the optimizer "
        "still holds the old layer's tensors, so the new '2.weight' and '2.bias' are never updated"
    )
    assert foreign == 2, (
        f"foreign={foreign}: the optimizer holds the replaced layer's weight and bias, 2 tensors "
        "that are no longer the model's"
    )


@pytest.mark.task("ch04.3")
@pytest.mark.points(2)
def test_coverage_is_by_identity_not_by_value():
    model = nn.Linear(3, 3)
    copies = [p.detach().clone().requires_grad_() for p in model.parameters()]
    opt = torch.optim.Adam(copies, lr=1e-3)
    missing, foreign = md.optimizer_coverage(model, opt)
    assert sorted(missing) == ["bias", "weight"] and foreign == 2, (
        f"an optimizer built over equal-valued copies of the parameters gave missing={missing}, "
        f"foreign={foreign}; expected ['bias', 'weight'] and 2: compare tensors by identity "
        "(id(p) or `is`), because an update to a copy never reaches the model"
    )
    full = torch.optim.Adam(model.parameters(), lr=1e-3)
    assert tuple(md.optimizer_coverage(model, full)) == ([], 0), (
        "an optimizer built from model.parameters() covers the model exactly: ([], 0)"
    )


# ---------------------------------------------------------------- ch04.4 build


@pytest.mark.task("ch04.4")
@pytest.mark.points(2)
def test_running_norm_statistics_are_buffers():
    norm = md.RunningNorm(4)
    assert list(norm.parameters()) == [], (
        f"RunningNorm has parameters {[n for n, _ in norm.named_parameters()]}: statistics are "
        "not trained, so they must be buffers, not nn.Parameters an optimizer would update"
    )
    buffers = dict(norm.named_buffers())
    assert {"running_mean", "running_var"} <= set(buffers), (
        f"RunningNorm's buffers are {sorted(buffers)}: register running_mean and running_var "
        "with register_buffer so state_dict() and .to() see them"
    )
    assert {"running_mean", "running_var"} <= set(norm.state_dict()), (
        "the running statistics must be saved in state_dict()"
    )
    norm.to(torch.float64)
    assert norm.running_mean.dtype == torch.float64 and norm.running_var.dtype == torch.float64, (
        f"after .to(torch.float64) running_mean is {norm.running_mean.dtype}: only registered "
        "buffers are converted by .to(); a plain tensor attribute stays behind"
    )


@pytest.mark.task("ch04.4")
@pytest.mark.points(2)
def test_running_norm_matches_batchnorm_without_affine():
    g = torch.Generator().manual_seed(3)
    ours, ref = md.RunningNorm(3, momentum=0.2), nn.BatchNorm1d(3, affine=False, momentum=0.2)
    for step in range(4):
        x = 2 + 3 * torch.randn(4, 3, generator=g)
        assert torch.allclose(ours(x), ref(x), atol=1e-5), (
            f"training-mode output at batch {step} differs from nn.BatchNorm1d(affine=False): "
            "normalise with the batch mean and the biased batch variance"
        )
    assert torch.allclose(ours.running_mean, ref.running_mean, atol=1e-5) and torch.allclose(
        ours.running_var, ref.running_var, atol=1e-5
    ), (
        f"after 4 batches running_var={ours.running_var.tolist()} vs BatchNorm's "
        f"{ref.running_var.tolist()}: running = (1 - momentum) * running + momentum * batch, "
        "with the unbiased batch variance"
    )
    ours.eval()
    ref.eval()
    x = torch.randn(5, 3, generator=g)
    assert torch.allclose(ours(x), ref(x), atol=1e-5), (
        "eval-mode output must use the running statistics, not the batch's"
    )
    unchanged = torch.allclose(ours.running_mean, ref.running_mean, atol=1e-5) and (
        torch.allclose(ours.running_var, ref.running_var, atol=1e-5)
    )
    assert unchanged, (
        "a forward in eval mode changed the running statistics: update them only in training "
        "mode (if self.training), or evaluating on validation data changes the model"
    )


# ---------------------------------------------------------------- ch04.5 build


@pytest.mark.task("ch04.5")
@pytest.mark.points(3)
def test_checkpoint_round_trip_gives_identical_outputs_and_training(tmp_path):
    torch.manual_seed(1)
    X, y = torch.randn(64, 2), torch.randint(0, 2, (64,))
    model = md.Classifier()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(model(X), y).backward()
        opt.step()
    path = tmp_path / "ckpt.pt"
    md.save_checkpoint(path, model, opt, epoch=3)
    torch.manual_seed(99)
    model2 = md.Classifier()
    opt2 = torch.optim.Adam(model2.parameters(), lr=1e-2)
    extra = md.load_checkpoint(path, model2, opt2)
    assert extra == {"epoch": 3}, (
        f"load_checkpoint returned {extra}, expected the saved extras {{'epoch': 3}}"
    )
    with torch.no_grad():
        assert torch.equal(model(X), model2(X)), (
            "the reloaded model's outputs differ from the saved model's: every registered "
            "parameter and buffer must travel through state_dict()"
        )
    owned = {id(p) for group in opt2.param_groups for p in group["params"]}
    assert all(id(p) in owned for p in model2.parameters()), (
        "after load_checkpoint(path, model2, opt2) the optimizer no longer holds model2's "
        "parameters: load_state_dict copies values into the existing tensors; assign=True (or "
        "replacing the parameters) swaps in new tensors that the optimizer does not know"
    )
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        F.cross_entropy(m(X), y).backward()
        o.step()
    same = all(torch.equal(a, b) for a, b in zip(model.parameters(), model2.parameters()))
    assert same, (
        "one more Adam step after the reload diverges from the original run: save the "
        "optimizer's state_dict too (Adam keeps per-parameter moments and a step count)"
    )


@pytest.mark.task("ch04.5")
def test_loading_a_mismatched_checkpoint_fails_loudly(tmp_path):
    path = tmp_path / "small.pt"
    md.save_checkpoint(path, md.Classifier(depth=2))
    try:
        md.load_checkpoint(path, md.Classifier(depth=3))
    except RuntimeError as exc:
        assert re.search("missing", str(exc), re.I), (
            f"loading a 2-block checkpoint into a 3-block model raised {str(exc)[:100]!r}; "
            "the error should name the missing keys (load_state_dict with strict=True does)"
        )
    else:
        raise AssertionError(
            "load_checkpoint loaded a 2-block checkpoint into a 3-block model without an error: "
            "with strict=False the third block silently keeps its random weights; load strictly"
        )
