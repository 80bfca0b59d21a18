"""Public tests for ch08 — run with `pytest exercises/ch08` (add `--impl solutions` to
see the reference pass)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness.target import chapter_module

dbg = chapter_module("ch08", "debugging")


def books_broken_setup(model):
    """The chapter's program: freeze, build the optimizer, *then* replace the head."""
    for p in model.features.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.head = nn.Linear(model.head.in_features, model.head.out_features)
    return model, optimizer


def pretrained(seed=0, **sizes):
    torch.manual_seed(seed)
    return dbg.TransferNet(**sizes)


def codes(findings):
    return {f.code for f in findings}


# ---------------------------------------------------------------- ch08.1 build_transfer_setup


@pytest.mark.task("ch08.1")
@pytest.mark.points(3)
def test_the_books_flat_loss_and_the_repair():
    batch = dbg.make_task(256, seed=1)
    model, opt = books_broken_setup(pretrained())
    flat = dbg.train_steps(model, opt, F.cross_entropy, batch, 200)
    assert round(flat[0], 6) == round(flat[-1], 6), (
        f"the book's setup should not learn at all: loss {flat[0]:.6f} -> {flat[-1]:.6f} after 200 steps"
    )
    model, opt = dbg.build_transfer_setup(pretrained())
    losses = dbg.train_steps(model, opt, F.cross_entropy, batch, 100)
    assert losses[-1] < 0.75 * losses[0], (
        f"100 steps after build_transfer_setup the loss went {losses[0]:.6f} -> {losses[-1]:.6f}: "
        "the book's flat curve. The optimizer was built before the head was replaced, so it holds "
        "the old head's tensors and never sees the new ones: build it after the swap"
    )


@pytest.mark.task("ch08.1")
@pytest.mark.points(2)
def test_repaired_setup_trains_exactly_the_new_head():
    original = pretrained(3)
    old_weight = original.head.weight.detach().clone()
    old_features = {n: p.detach().clone() for n, p in original.features.named_parameters()}
    model, opt = dbg.build_transfer_setup(original)
    assert (
        isinstance(model.head, nn.Linear)
        and model.head.weight.shape == old_weight.shape
        and not torch.equal(model.head.weight.detach(), old_weight)
    ), (
        "build_transfer_setup should give the model a fresh nn.Linear head of the same shape for "
        "the new task (newly initialized, not the pretrained head's weights)"
    )
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    head = {id(p) for p in model.head.parameters()}
    assert held == head, (
        f"the optimizer holds {len(held)} tensors, of which {len(held & head)} are the new head's "
        f"{len(head)}: it should hold exactly the parameters that train — frozen feature weights "
        "never get a gradient, and the old head is no longer part of the model"
    )
    dbg.train_steps(model, opt, F.cross_entropy, dbg.make_task(64, seed=4), 20)
    for n, p in model.features.named_parameters():
        assert not p.requires_grad and torch.equal(p, old_features[n]), (
            f"features.{n} changed or requires grad after training: the pretrained features must "
            "stay frozen (requires_grad False)"
        )


# ---------------------------------------------------------------- ch08.2 diagnose


@pytest.mark.task("ch08.2")
@pytest.mark.points(3)
def test_diagnose_names_the_books_bug():
    model, opt = books_broken_setup(pretrained())
    findings = dbg.diagnose(model, opt, F.cross_entropy, dbg.make_task(128, seed=2), 10)
    missing = [f.where for f in findings if f.code == "not_in_optimizer"]
    assert sorted(missing) == ["head.bias", "head.weight"], (
        f"diagnose on the book's setup reported not_in_optimizer for {missing}, expected "
        "['head.bias', 'head.weight']: compare the model's trainable named_parameters() with the "
        "optimizer's param_groups by identity (id), not by shape or value"
    )
    assert "loss_constant" in codes(findings), (
        f"diagnose on the book's setup returned codes {sorted(codes(findings))}; the loss is the "
        "same at every step, which should be reported as loss_constant"
    )


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_is_silent_on_healthy_setups():
    batch = dbg.make_task(128, seed=5)
    model = pretrained(6)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    findings = dbg.diagnose(model, opt, F.cross_entropy, batch, 30)
    unheld = [f.where for f in findings if f.code == "not_in_optimizer"]
    copies = (
        " — every parameter looks unregistered, as when model and optimizer are deep-copied one "
        "at a time: copy them together (one deepcopy call, one memo) so the copied optimizer "
        "holds the copied model's parameters"
        if len(unheld) == len(list(model.parameters()))
        else ""
    )
    assert findings == [], (
        f"diagnose on a fully trainable model with SGD reported {findings}: a healthy run "
        f"(every parameter in the optimizer, reached, moving, loss falling) has no findings{copies}"
    )
    model = pretrained(7)
    for p in model.features.parameters():
        p.requires_grad_(False)
    model.head = nn.Linear(32, 4)
    opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
    findings = dbg.diagnose(model, opt, F.cross_entropy, batch, 30)
    assert findings == [], (
        f"diagnose on a correct transfer setup (features frozen and outside the optimizer) "
        f"reported {findings}: a frozen parameter that the optimizer does not hold is intended"
    )


# ---------------------------------------------------------------- ch08.3 overfit_one_batch


@pytest.mark.task("ch08.3")
@pytest.mark.points(3)
def test_a_healthy_model_memorizes_eight_examples():
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(8, 8, generator=g), torch.randint(0, 4, (8,), generator=g)
    model = pretrained(9)
    start = F.cross_entropy(model(x), y).item()
    losses = dbg.overfit_one_batch(model, (x, y), 100)
    assert len(losses) == 100, f"overfit_one_batch(model, batch, 100) returned {len(losses)} losses"
    held = [k for k, v in enumerate(losses) if isinstance(v, torch.Tensor) and v.requires_grad]
    assert not held, (
        f"overfit_one_batch returned {len(held)} losses that are tensors still attached to their "
        "step's graph (keeping every graph alive): record numbers, loss.item() or float(loss)"
    )
    assert losses[0] == pytest.approx(start, rel=1e-5), (
        f"losses[0] = {losses[0]:.5f} but the untrained model's loss is {start:.5f}: record each "
        "step's loss before its update"
    )
    pred = model(x).argmax(dim=1)
    assert losses[-1] < 0.05 and torch.equal(pred, y), (
        f"after 100 steps on 8 examples the loss is {losses[-1]:.4f} and {int((pred == y).sum())}/8 "
        "are right: a healthy model should memorize one small batch (train the model in place, "
        "full batch, with a step size that makes progress — e.g. Adam at 1e-2)"
    )
