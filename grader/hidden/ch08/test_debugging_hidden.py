"""Hidden tests for ch08: other failures, sizes and seeds than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from exercises.ch08.test_debugging import pretrained  # helpers shared with the public twin
from harness.target import chapter_module

dbg = chapter_module("ch08", "debugging")


def codes(findings):
    return {f.code for f in findings}


def where(findings, code):
    return sorted(f.where for f in findings if f.code == code)


def linear_probe(seed):
    torch.manual_seed(seed)
    return nn.Linear(8, 4)


class ZeroGradBeforeStep(torch.optim.SGD):
    """The loop bug `backward(); zero_grad(); step()`, folded into the optimizer's step."""

    def step(self, closure=None):
        self.zero_grad()
        return super().step(closure)


class Detached(nn.Module):
    """A first layer whose output is detached before the head sees it."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)).detach())


# ---------------------------------------------------------------- ch08.1 build_transfer_setup


@pytest.mark.task("ch08.1")
@pytest.mark.points(2)
def test_transfer_setup_for_other_sizes():
    model = pretrained(21, d_in=5, hidden=6, n_classes=6)
    old = model.head.weight.detach().clone()
    model, opt = dbg.build_transfer_setup(model)
    assert model.head.weight.shape == (6, 6) and not torch.equal(model.head.weight, old), (
        "the new head keeps the old head's shape and gets a fresh initialization"
    )
    batch = dbg.make_task(200, seed=22, d_in=5, n_classes=6)
    before = F.cross_entropy(model(batch[0]), batch[1]).item()
    losses = dbg.train_steps(model, opt, F.cross_entropy, batch, 50)
    assert losses[-1] < 0.9 * before, (
        "after the repair the new head must learn: the loss has to fall over 50 steps"
    )
    held = {id(p) for g in opt.param_groups for p in g["params"]}
    assert held == {id(p) for p in model.head.parameters()}, (
        "the optimizer holds exactly the new head's parameters"
    )


# ---------------------------------------------------------------- ch08.2 diagnose


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_the_books_setup_in_full():
    torch.manual_seed(23)
    model = dbg.TransferNet()
    for p in model.features.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.head = nn.Linear(32, 4)
    findings = dbg.diagnose(model, opt, F.cross_entropy, dbg.make_task(64, seed=24), 5)
    assert where(findings, "frozen") == ["features.0.bias", "features.0.weight"], (
        "parameters the optimizer holds although they do not require grad are reported as frozen"
    )
    assert "not_in_model" in codes(findings), (
        "tensors the optimizer holds that the model no longer owns (the replaced head) are "
        "reported as not_in_model"
    )
    assert where(findings, "not_in_optimizer") == ["head.bias", "head.weight"], (
        "the trainable parameters the optimizer does not hold are reported as not_in_optimizer, "
        "matched by identity even when the old and new head have the same shapes"
    )


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_a_zero_learning_rate():
    model = pretrained(25)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    findings = dbg.diagnose(model, opt, F.cross_entropy, dbg.make_task(64, seed=26), 6)
    names = [n for n, _ in model.named_parameters()]
    assert where(findings, "not_moving") == sorted(names) and "loss_constant" in codes(findings), (
        "with learning rate 0 every parameter gets a gradient but none moves (not_moving) and the "
        "loss stays constant (loss_constant)"
    )
    assert "not_in_optimizer" not in codes(findings) and "no_grad" not in codes(findings), (
        "lr 0 is not a registration or reachability problem"
    )


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_gradients_cleared_before_the_step():
    model = pretrained(27)
    opt = ZeroGradBeforeStep(model.parameters(), lr=0.1)
    findings = dbg.diagnose(model, opt, F.cross_entropy, dbg.make_task(64, seed=28), 6)
    assert len(where(findings, "not_moving")) == 4, (
        "gradients cleared between backward and step: parameters had gradients after backward "
        "but never moved — not_moving for each"
    )


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_shuffled_labels():
    true = dbg.make_task(512, seed=29)
    shuffled = dbg.make_task(512, seed=29, shuffle_labels=True)
    model = linear_probe(30)
    findings = dbg.diagnose(
        model, torch.optim.SGD(model.parameters(), lr=0.5), F.cross_entropy, shuffled, 20
    )
    assert codes(findings) == {"at_chance"}, (
        "with shuffled labels a linear model cannot beat the label-frequency baseline: at_chance "
        "only (the mechanics are healthy)"
    )
    findings = dbg.diagnose(
        model, torch.optim.SGD(model.parameters(), lr=0.5), F.cross_entropy, true, 20
    )
    assert findings == [], "with the true labels the same setup is healthy and gets no finding"


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_softmax_fed_to_cross_entropy():
    model = nn.Sequential(pretrained(31), nn.Softmax(dim=1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    findings = dbg.diagnose(model, opt, F.cross_entropy, dbg.make_task(128, seed=32), 10)
    assert "probabilities_as_logits" in codes(findings), (
        "outputs that are probability rows (non-negative, summing to 1) passed to a loss that "
        "applies log_softmax itself are reported as probabilities_as_logits"
    )
    assert not {"not_in_optimizer", "no_grad", "frozen"} & codes(findings), (
        "softmax before cross_entropy is not a registration or reachability problem"
    )


@pytest.mark.task("ch08.2")
@pytest.mark.points(2)
def test_diagnose_unreachable_and_nonfinite():
    torch.manual_seed(33)
    model = Detached()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    findings = dbg.diagnose(model, opt, F.cross_entropy, dbg.make_task(64, seed=34), 5)
    assert where(findings, "no_grad") == ["body.bias", "body.weight"], (
        "trainable parameters that backward never reaches (their .grad stays None) are reported "
        "as no_grad"
    )
    model = pretrained(35)
    opt = torch.optim.SGD(model.parameters(), lr=100.0)
    x, y = dbg.make_task(64, seed=36)
    findings = dbg.diagnose(model, opt, F.cross_entropy, (x * 100, y), 30)
    assert "loss" in where(findings, "nonfinite"), (
        "a loss that overflows to inf or nan is reported as nonfinite at 'loss'"
    )


@pytest.mark.task("ch08.2")
def test_diagnose_everything_frozen_and_leaves_the_caller_alone():
    model = pretrained(37)
    for p in model.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    findings = dbg.diagnose(model, opt, F.cross_entropy, dbg.make_task(64, seed=38), 4)
    assert len(where(findings, "frozen")) == 4 and "loss_constant" in codes(findings), (
        "a model whose every parameter is frozen: frozen for each parameter the optimizer holds, "
        "and a constant loss"
    )
    model = pretrained(39)
    before = [p.detach().clone() for p in model.parameters()]
    dbg.diagnose(
        model,
        torch.optim.SGD(model.parameters(), lr=0.5),
        F.cross_entropy,
        dbg.make_task(64, seed=40),
        5,
    )
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before)), (
        "diagnose runs its steps on a copy: the caller's model must be unchanged"
    )


# ---------------------------------------------------------------- ch08.3 overfit_one_batch


@pytest.mark.task("ch08.3")
@pytest.mark.points(2)
def test_overfit_regression_targets():
    torch.manual_seed(41)
    model = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 3))
    g = torch.Generator().manual_seed(42)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g)
    losses = dbg.overfit_one_batch(model, (x, y), 150)
    final = F.mse_loss(model(x), y).item()
    grew = (
        " The loss ended above where it started: each step must follow that step's gradient "
        "alone (zero_grad before every backward), or the gradients accumulate across steps."
        if final > float(losses[0])
        else ""
    )
    assert final < 0.01 * losses[0], (
        "float targets are fitted with mean squared error; a healthy model drives it to near 0 on "
        f"one batch, and the model is trained in place.{grew}"
    )


@pytest.mark.task("ch08.3")
def test_overfit_records_losses_before_each_update():
    g = torch.Generator().manual_seed(43)
    x, y = torch.randn(8, 8, generator=g), torch.arange(8) % 4
    model = pretrained(44)
    assert dbg.overfit_one_batch(model, (x, y), 0) == [], "zero steps give no losses"
    first = dbg.overfit_one_batch(model, (x, y), 1)
    after = F.cross_entropy(model(x), y).item()
    second = dbg.overfit_one_batch(model, (x, y), 1)
    assert len(first) == 1 and second[0] == pytest.approx(after, rel=1e-5), (
        "each recorded loss belongs to the prediction made before that step's update, and the "
        "model itself is trained in place"
    )
