"""Hidden tests for ch04: other shapes of the registration bug, other sizes and edge
cases than the public ones. Messages state the property, not the test.

PYTEST_DONT_REWRITE: a failure shows only the message, never the assertion's source."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness.target import chapter_module

md = chapter_module("ch04", "modules")


def unquote(paths):
    return sorted(p.replace("'", "").replace('"', "") for p in paths)


# ---------------------------------------------------------------- ch04.1


@pytest.mark.task("ch04.1")
def test_other_sizes_register_every_block():
    model = md.Classifier(d_in=3, hidden=8, depth=5, n_classes=4)
    n = sum(p.numel() for p in model.parameters())
    assert n == 3 * 8 + 8 + 5 * (8 * 8 + 8) + 8 * 4 + 4, (
        "every block of every Encoder size must be registered and counted by parameters()"
    )
    state = model.state_dict()
    assert sum(t.numel() for t in state.values()) == n and len(state) == 2 + 2 * 5 + 2, (
        "every block's weight and bias must appear in state_dict()"
    )


@pytest.mark.task("ch04.1")
def test_zero_grad_and_gradients_reach_every_block():
    model = md.Classifier(depth=4)
    x = torch.randn(32, 2)
    F.cross_entropy(model(x), torch.randint(0, 2, (32,))).backward()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [b.linear.weight.detach().clone() for b in model.encoder.blocks]
    opt.step()
    moved = [not torch.equal(b.linear.weight, w) for b, w in zip(model.encoder.blocks, before)]
    assert all(moved), (
        "an optimizer built from model.parameters() must update every block; blocks outside "
        "the module tree keep their gradients but are never stepped"
    )
    model.zero_grad(set_to_none=True)
    assert all(b.linear.weight.grad is None for b in model.encoder.blocks), (
        "model.zero_grad() must reach every block"
    )


@pytest.mark.task("ch04.1")
def test_no_blocks_and_train_eval_propagate():
    empty = md.Classifier(depth=0)
    assert sum(p.numel() for p in empty.parameters()) == 2 * 16 + 16 + 16 * 2 + 2, (
        "an Encoder of depth 0 is the stem alone"
    )
    model = md.Classifier(depth=2).eval()
    assert all(not m.training for m in model.encoder.blocks), (
        "model.eval() must reach every block (only registered submodules are switched)"
    )


# ---------------------------------------------------------------- ch04.2


@pytest.mark.task("ch04.2")
@pytest.mark.points(2)
def test_other_shapes_of_the_registration_bug():
    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = nn.Linear(4, 4)
            self.heads = {"cls": nn.Linear(4, 3), "box": nn.Linear(4, 4)}
            self.register_buffer("ok_buffer", torch.zeros(4))
            self.center = torch.zeros(4)
            self.scales = (nn.Parameter(torch.ones(4)), nn.Parameter(torch.zeros(4)))
            self.note = "plain strings and numbers are fine"
            self.width = 4

    outer = nn.Sequential(nn.Linear(4, 4), Heads())
    got = unquote(md.unregistered_state(outer))
    want = sorted(["1.heads[cls]", "1.heads[box]", "1.center", "1.scales[0]", "1.scales[1]"])
    assert got == want, (
        "unregistered_state must report, with their dotted paths, modules in a plain dict, a "
        "tensor that should be a buffer and parameters in a tuple — and nothing that is "
        f"registered or is not a tensor or module (expected {want})"
    )


@pytest.mark.task("ch04.2")
def test_aliases_of_registered_objects_are_not_reported():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])
            self.order = [self.layers[1], self.layers[0]]  # a view of registered modules
            self.lookup = {"w": self.layers[0].weight}  # a registered parameter, by name

    got = md.unregistered_state(Tied())
    assert got == [], (
        "objects that are registered elsewhere in the model are saved and moved with it; only "
        f"objects PyTorch does not know about should be reported (got {got})"
    )


@pytest.mark.task("ch04.2")
def test_nested_lists_and_deep_paths():
    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.stages = [[nn.Linear(2, 2)], [nn.Linear(2, 2), nn.Linear(2, 2)]]

    model = nn.Module()
    model.body = nn.ModuleDict({"enc": nn.Sequential(Inner())})
    model.extra = [torch.zeros(2)]  # on the root itself: no prefix, no leading dot
    got = unquote(md.unregistered_state(model))
    want = ["body.enc.0.stages[0][0]", "body.enc.0.stages[1][0]", "body.enc.0.stages[1][1]"]
    want = sorted(want + ["extra[0]"])
    assert got == want, (
        "lists inside lists must be searched, and paths must start from the root model (an "
        f"attribute of the root itself has no prefix) (expected {want})"
    )


# ---------------------------------------------------------------- ch04.3


@pytest.mark.task("ch04.3")
def test_coverage_with_groups_shared_and_frozen_parameters():
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3))
    model[2].weight = model[0].weight  # tied: one tensor, registered once
    model[1].requires_grad_(False)  # frozen on purpose
    stray = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD(
        [{"params": [model[0].weight, model[0].bias]}, {"params": [stray], "lr": 0.01}], lr=0.1
    )
    missing, foreign = md.optimizer_coverage(model, opt)
    assert sorted(missing) == ["2.bias"], (
        "missing must list the trainable parameters no param group holds, once per tensor "
        "(a tied weight is one tensor) and not the frozen ones"
    )
    assert foreign == 1, (
        "foreign must count the tensors held by any param group that are not the model's"
    )


@pytest.mark.task("ch04.3")
def test_coverage_after_moving_to_another_dtype():
    model = nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to(torch.float64)  # in-place conversion keeps the same Parameter objects
    assert tuple(md.optimizer_coverage(model, opt)) == ([], 0), (
        "Module.to() converts parameters in place, so the optimizer still owns them"
    )


# ---------------------------------------------------------------- ch04.4


@pytest.mark.task("ch04.4")
def test_running_norm_does_not_keep_the_graph():
    norm = md.RunningNorm(3)
    lin = nn.Linear(3, 3)
    for _ in range(3):
        out = norm(lin(torch.randn(8, 3)))
        out.pow(2).sum().backward()
    assert not norm.running_mean.requires_grad and norm.running_mean.grad_fn is None, (
        "the running statistics must be updated without recording a graph (torch.no_grad or "
        "detach), or each step drags the previous steps' graph along"
    )


@pytest.mark.task("ch04.4")
def test_running_norm_float64_and_state_round_trip():
    g = torch.Generator().manual_seed(8)
    norm = md.RunningNorm(5, momentum=0.5).to(torch.float64)
    ref = nn.BatchNorm1d(5, affine=False, momentum=0.5).to(torch.float64)
    for _ in range(3):
        x = torch.randn(6, 5, generator=g, dtype=torch.float64) * 4 - 1
        norm(x)
        ref(x)
    assert norm.running_var.dtype == torch.float64, "statistics must follow .to(dtype)"
    assert torch.allclose(norm.running_var, ref.running_var, rtol=1e-10), (
        "the running statistics must follow BatchNorm's update rule in float64 too"
    )
    fresh = md.RunningNorm(5, momentum=0.5).to(torch.float64)
    fresh.load_state_dict(norm.state_dict())
    fresh.eval()
    norm.eval()
    x = torch.randn(4, 5, generator=g, dtype=torch.float64)
    assert torch.equal(fresh(x), norm(x)), (
        "a RunningNorm loaded from another's state_dict must normalise identically in eval mode"
    )


# ---------------------------------------------------------------- ch04.5


@pytest.mark.task("ch04.5")
@pytest.mark.points(2)
def test_checkpoint_carries_buffers_and_is_a_snapshot(tmp_path):
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(3, 3), md.RunningNorm(3))
    model(torch.randn(10, 3) * 5)  # training mode: moves the running statistics
    model.eval()
    probe = torch.randn(4, 3)
    saved = model(probe).detach().clone()
    path = tmp_path / "c.pt"
    md.save_checkpoint(path, model, step=7, note="after warmup")
    with torch.no_grad():  # changes after saving must not leak into the checkpoint
        model[0].weight.add_(1.0)
        model[1].running_mean.add_(1.0)
    fresh = nn.Sequential(nn.Linear(3, 3), md.RunningNorm(3))
    extra = md.load_checkpoint(path, fresh)
    assert extra == {"step": 7, "note": "after warmup"}, (
        "load_checkpoint must return the saved extras"
    )
    fresh.eval()
    assert torch.equal(fresh(probe), saved), (
        "the reloaded model must reproduce the outputs at save time: the checkpoint carries "
        "parameters and buffers (running statistics) as a snapshot, not a live reference"
    )


@pytest.mark.task("ch04.5")
def test_checkpoint_without_optimizer_and_extra_keys_rejected(tmp_path):
    path = tmp_path / "big.pt"
    md.save_checkpoint(path, md.Classifier(depth=3))
    try:
        md.load_checkpoint(path, md.Classifier(depth=1))
    except RuntimeError:
        pass
    else:
        raise AssertionError(
            "a checkpoint with keys the model does not have (unexpected keys) must be rejected"
        )
    model = md.Classifier(depth=1)
    path = tmp_path / "ok.pt"
    md.save_checkpoint(path, model)
    other = md.Classifier(depth=1)
    assert md.load_checkpoint(path, other) == {}, "with no extras, load_checkpoint returns {}"
    x = torch.randn(3, 2)
    assert torch.equal(other(x), model(x)), "the reloaded model must give identical outputs"
