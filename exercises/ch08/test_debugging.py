"""Public tests for ch08 — run with `pytest exercises/ch08` (add `--impl solutions` to
see the reference pass)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness import judge
from harness.probe import probe
from harness.target import chapter_module

dbg = chapter_module("ch08", "debugging")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "InfiniteLoss SETUPS books_broken_setup books_bug healthy_sgd healthy_transfer mlp "
    "overflowing_loss pretrained"
)


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
    return {f.code for f in checked(findings)}


CODES = {  # the codes diagnose documents
    "not_in_optimizer",
    "frozen",
    "not_in_model",
    "no_grad",
    "nonfinite",
    "not_moving",
    "loss_constant",
    "probabilities_as_logits",
    "at_chance",
}


def finding_problem(findings, *, with_detail: bool = False) -> str | None:
    """Why ``findings`` is not diagnose's answer (None if it is): a list of findings, each
    with a documented code and a string ``where`` (and, ``with_detail``, a non-empty
    ``detail``), so an empty tensor or a list of NaNs never reads as "nothing found"."""
    if type(findings) is not list:
        return f"diagnose returned {type(findings).__name__}, expected a list of Finding"
    for f in findings:
        code, place, detail = (getattr(f, n, None) for n in ("code", "where", "detail"))
        if type(code) is not str or code not in CODES:
            return f"the item {f!r} has no code among {sorted(CODES)}"
        if type(place) is not str:
            return f"the item {f!r}: where names a parameter, 'loss', 'output' or 'optimizer'"
        if with_detail and (type(detail) is not str or not detail.strip()):
            return f"the item {f!r}: detail is a non-empty sentence with the evidence"
    return None


def checked(findings):
    """``findings``, once ``finding_problem`` finds nothing wrong with them."""
    problem = finding_problem(findings)
    assert problem is None, (
        f"diagnose must return a list of Finding(code, where, detail): {problem}"
    )
    return findings


def where(findings, code):
    """The sorted ``where`` of the findings with ``code`` (``findings`` checked first)."""
    return sorted(f.where for f in checked(findings) if f.code == code)


def mlp(seed, d_in=8, width=32, d_out=4):
    """A small MLP, the same from the same seed on either side of a split run."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d_in, width), nn.ReLU(), nn.Linear(width, d_out))


# ---------------------------------------------------------------- ch08.1 build_transfer_setup


@probe
def flat_and_repaired(seed, n, task_seed, broken_steps, repaired_steps):
    """The book's broken setup trained broken_steps steps, and build_transfer_setup of the
    same pretrained model trained repaired_steps steps: both loss curves."""
    batch = dbg.make_task(n, seed=task_seed)
    model, opt = books_broken_setup(pretrained(seed))
    flat = dbg.train_steps(model, opt, F.cross_entropy, batch, broken_steps)
    model, opt = dbg.build_transfer_setup(pretrained(seed))
    return flat, dbg.train_steps(model, opt, F.cross_entropy, batch, repaired_steps)


@probe
def transfer_setup(seed, sizes, task_seed, steps):
    """build_transfer_setup of a pretrained TransferNet(**sizes), then `steps` training
    steps with the optimizer it returned. Observations: the old and the new head's weight,
    whether the head is an nn.Linear and requires grad, what the optimizer holds (by
    identity, counted beside the model), its type and lr, and the features before and
    after training with their requires_grad flags."""
    original = pretrained(seed, **sizes)
    old_head = original.head.weight.detach().clone()
    old_features = [p.detach().clone() for p in original.features.parameters()]
    model, opt = dbg.build_transfer_setup(original)
    held = [id(p) for group in opt.param_groups for p in group["params"]]
    head = {id(p) for p in model.head.parameters()}
    features = {id(p) for p in model.features.parameters()}
    seen = {
        "old_head": old_head,
        "new_head": model.head.weight.detach().clone(),
        "head_is_linear": isinstance(model.head, nn.Linear),
        "head_trainable": all(p.requires_grad for p in model.head.parameters()),
        "held": len(set(held)),
        "held_of_head": len(set(held) & head),
        "head_size": len(head),
        "held_of_features": len(set(held) & features),
        "optimizer": type(opt).__name__,
        "lrs": [group["lr"] for group in opt.param_groups],
        "features_before": old_features,
    }
    d_in, n_classes = sizes.get("d_in", 8), sizes.get("n_classes", 4)
    batch = dbg.make_task(64, seed=task_seed, d_in=d_in, n_classes=n_classes)
    with torch.no_grad():
        seen["loss_before"] = F.cross_entropy(model(batch[0]), batch[1]).item()
    seen["losses"] = dbg.train_steps(model, opt, F.cross_entropy, batch, steps)
    seen["features_after"] = [p.detach().clone() for p in model.features.parameters()]
    seen["features_frozen"] = [not p.requires_grad for p in model.features.parameters()]
    return seen


@pytest.mark.task("ch08.1")
@pytest.mark.points(3)
def test_the_books_flat_loss_and_the_repair():
    flat, losses = flat_and_repaired(0, 256, 1, 200, 100)
    # The book's numbers for the broken program: they do not depend on your code.
    assert round(flat[0], 6) == round(flat[-1], 6) == 1.455877, (
        f"the book's setup gave loss {flat[0]:.6f} -> {flat[-1]:.6f} after 200 steps, the book "
        "1.455877 at both ends: this torch build does not reproduce the chapter's numbers"
    )
    assert losses[-1] < 0.75 * losses[0], (
        f"100 steps after build_transfer_setup the loss went {losses[0]:.6f} -> {losses[-1]:.6f}: "
        "the book's flat curve. The optimizer was built before the head was replaced, so it holds "
        "the old head's tensors and never sees the new ones: build it after the swap"
    )


@pytest.mark.task("ch08.1")
@pytest.mark.points(2)
def test_repaired_setup_trains_exactly_the_new_head():
    seen = transfer_setup(3, {}, 4, 20)
    fresh = (
        seen["head_is_linear"]
        and seen["new_head"].shape == seen["old_head"].shape
        and judge.differ(seen["new_head"], seen["old_head"], atol=0, rtol=0)
    )
    assert fresh, (
        "build_transfer_setup should give the model a fresh nn.Linear head of the same shape for "
        "the new task (newly initialized, not the pretrained head's weights)"
    )
    assert seen["held"] == seen["held_of_head"] == seen["head_size"], (
        f"the optimizer holds {seen['held']} tensors, of which {seen['held_of_head']} are the new "
        f"head's {seen['head_size']}: it should hold exactly the parameters that train — frozen "
        "feature weights never get a gradient, and the old head is no longer part of the model"
    )
    unchanged = all(
        judge.is_equal(a, b) for a, b in zip(seen["features_before"], seen["features_after"])
    )
    assert all(seen["features_frozen"]) and unchanged, (
        f"after training, the features require grad {[not f for f in seen['features_frozen']]} "
        f"and {'are unchanged' if unchanged else 'changed'}: the pretrained features must stay "
        "frozen (requires_grad False on each of their parameters)"
    )


# ---------------------------------------------------------------- ch08.2 diagnose


def books_bug(steps_seed=2):
    model, opt = books_broken_setup(pretrained())
    return model, opt, F.cross_entropy, dbg.make_task(128, seed=steps_seed)


def healthy_sgd():
    model = pretrained(6)
    return (
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        F.cross_entropy,
        dbg.make_task(128, seed=5),
    )


def healthy_transfer():
    model = pretrained(7)
    for p in model.features.parameters():
        p.requires_grad_(False)
    model.head = nn.Linear(32, 4)
    opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
    return model, opt, F.cross_entropy, dbg.make_task(128, seed=5)


class InfiniteLoss:
    """Cross-entropy plus +inf: the loss is inf while every gradient stays finite."""

    def __call__(self, out, y):
        return F.cross_entropy(out, y) + float("inf")


def overflowing_loss():
    model = pretrained(11)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, opt, InfiniteLoss(), dbg.make_task(64, seed=12)


SETUPS = {
    "book's bug": books_bug,
    "healthy SGD": healthy_sgd,
    "healthy transfer": healthy_transfer,
    "loss is +inf": overflowing_loss,
}


@probe
def diagnosed(setup, steps):
    """diagnose on a freshly built setup (SETUPS): its findings, and how many parameters the
    model has (counted beside it)."""
    model, opt, loss_fn, batch = SETUPS[setup]()
    return dbg.diagnose(model, opt, loss_fn, batch, steps), len(list(model.parameters()))


@pytest.mark.task("ch08.2")
@pytest.mark.points(4)
def test_diagnose_names_the_books_bug():
    findings, _ = diagnosed("book's bug", 10)
    missing = where(findings, "not_in_optimizer")
    assert missing == ["head.bias", "head.weight"], (
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
    findings, n_params = diagnosed("healthy SGD", 30)
    unheld = where(findings, "not_in_optimizer")
    copies = (
        " — every parameter looks unregistered, as when model and optimizer are deep-copied one "
        "at a time: copy them together (one deepcopy call, one memo) so the copied optimizer "
        "holds the copied model's parameters"
        if len(unheld) == n_params
        else ""
    )
    assert findings == [], (
        f"diagnose on a fully trainable model with SGD reported {findings}: a healthy run "
        f"(every parameter in the optimizer, reached, moving, loss falling) has no findings{copies}"
    )
    findings, _ = diagnosed("healthy transfer", 30)
    assert findings == [], (
        f"diagnose on a correct transfer setup (features frozen and outside the optimizer) "
        f"reported {findings}: a frozen parameter that the optimizer does not hold is intended"
    )


@pytest.mark.task("ch08.2")
def test_diagnose_reports_an_infinite_loss():
    findings, _ = diagnosed("loss is +inf", 4)
    assert "loss" in where(findings, "nonfinite"), (
        f"a loss of +inf at every step (finite gradients) gave the findings {findings}; expected "
        "nonfinite at 'loss': inf is non-finite as well as nan — test with math.isfinite or "
        "torch.isfinite, not only isnan"
    )
    assert "loss_constant" not in codes(findings), (
        "a loss that is inf at every step is non-finite, not constant: only finite losses can "
        "be compared (inf - inf is nan)"
    )


# ---------------------------------------------------------------- ch08.3 overfit_one_batch


@probe
def overfitted(seed, x, y, steps):
    """overfit_one_batch on this file's mlp(seed): the losses it returned and the trained
    model's predictions on x."""
    model = mlp(seed, d_in=x.shape[1], d_out=4 if not y.is_floating_point() else y.shape[1])
    losses = dbg.overfit_one_batch(model, (x, y), steps)
    with torch.no_grad():
        return losses, model(x)


@pytest.mark.task("ch08.3")
@pytest.mark.points(2)
def test_a_healthy_model_memorizes_eight_examples():
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(8, 8, generator=g), torch.randint(0, 4, (8,), generator=g)
    with torch.no_grad():
        start = F.cross_entropy(mlp(9)(x), y).item()
    losses, out = overfitted(9, x, y, 100)
    assert len(losses) == 100, f"overfit_one_batch(model, batch, 100) returned {len(losses)} losses"
    held = [k for k, v in enumerate(losses) if isinstance(v, torch.Tensor) and v.requires_grad]
    assert not held, (
        f"overfit_one_batch returned {len(held)} losses that are tensors still attached to their "
        "step's graph (keeping every graph alive): record numbers, loss.item() or float(loss)"
    )
    judge.number(
        float(losses[0]),
        start,
        f"losses[0] = {float(losses[0]):.5f} but the untrained model's loss is {start:.5f}: record "
        "each step's loss before its update",
        abs=1e-12,
        rel=1e-5,
    )
    pred = out.argmax(dim=1)
    assert float(losses[-1]) < 0.05 and judge.is_equal(pred, y), (
        f"after 100 steps on 8 examples the loss is {float(losses[-1]):.4f} and "
        f"{int((pred == y).sum())}/8 are right: a healthy model should memorize one small batch "
        "(train the model in place, full batch, with a step size that makes progress — e.g. "
        "Adam at 1e-2)"
    )


@pytest.mark.task("ch08.3")
def test_overfit_fits_float_targets_with_mean_squared_error():
    """Float targets: losses[0] is the untrained model's MSE, and 100 steps drive it near 0."""
    g = torch.Generator().manual_seed(13)
    x, y = torch.randn(8, 8, generator=g), torch.randn(8, 4, generator=g)
    with torch.no_grad():
        untrained = mlp(14)(x)
    start, start_ce = F.mse_loss(untrained, y).item(), F.cross_entropy(untrained, y).item()
    losses, out = overfitted(14, x, y, 100)
    assert len(losses) == 100, f"overfit_one_batch(model, batch, 100) returned {len(losses)} losses"
    losses = [float(v) for v in losses]
    used_ce = judge.is_number(losses[0], start_ce, abs=1e-12, rel=1e-5)
    judge.number(
        losses[0],
        start,
        f"with float targets (8 x 4 real values) losses[0] = {losses[0]:.5f}, but the untrained "
        f"model's mean squared error is {start:.5f}: "
        + (
            f"{losses[0]:.5f} is its cross-entropy, which reads float targets as class "
            "probabilities — use mean squared error for float targets"
            if used_ce
            else "losses[0] is the loss of the untrained model's prediction — mean squared "
            "error for float targets — measured before the first update"
        ),
        abs=1e-12,
        rel=1e-5,
    )
    final = F.mse_loss(out, y).item()
    low = min(range(len(losses)), key=losses.__getitem__)
    climbed = (
        f" The loss fell to {losses[low]:.4f} at step {low} and then climbed back to "
        f"{final:.4f}: on a batch the model can fit that usually means gradients pile up across "
        "steps — call zero_grad before every backward (backward adds into .grad, so without it "
        "each step follows the sum of all earlier gradients)."
        if final > 2 * losses[low]
        else " A healthy model drives it near 0 on one batch: train the model given, in place, "
        "with full-batch Adam at lr 1e-2."
    )
    assert final < 0.01 * start, (
        f"overfit_one_batch for 100 steps on 8 examples with float targets: the trained model's "
        f"mean squared error is {final:.4f}, from {start:.4f} before training.{climbed}"
    )
