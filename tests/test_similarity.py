"""The similarity report: planted copies (verbatim, renamed and reordered, partly copied)
are flagged, independent correct solutions and the untouched starter code are not; each
pair is shown with both students' grades, in ``summary.md`` and ``_instructor/``; and a
grader without copydetect still grades."""

from __future__ import annotations

import csv
import itertools
import re
import sys

import pytest

from grader import merge, report, score, similarity
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import SOLUTION, STUB

pytest.importorskip("copydetect")

CH00 = index.chapter("ch00")

# Two correct ch00 solutions written independently of the reference (and of each other).
INDEPENDENT_A = '"""ch00 mine."""\n\nfrom __future__ import annotations\n\nimport math\nfrom pathlib import Path\nfrom typing import NamedTuple\n\nimport torch\n\n\nclass TrainResult(NamedTuple):\n    """Final weight, and one row per step: ``ws[k]`` made the prediction scored by ``losses[k]``."""\n\n    w: float\n    ws: list[float]\n    losses: list[float]\n\n\ndef gradient_at(w: float, x: float, target: float) -> float:\n    """d/dw of (x*w - target)**2 at ``w``, obtained with autograd. Returns a Python float."""\n    param = torch.tensor([w], dtype=torch.float64, requires_grad=True)\n    err = param * x - target\n    (err * err).sum().backward()\n    return float(param.grad[0])\n\n\ndef train_scalar(\n    xs: list[float], targets: list[float], w0: float, lr: float, steps: int\n) -> TrainResult:\n    """Fit y = w*x by mean squared error with plain gradient descent for ``steps`` steps.\n\n    The update happens under ``torch.no_grad()`` and the gradient is zeroed every step.\n    Row k of (ws, losses) is one coherent state: the w used for prediction k and its loss.\n    """\n    inputs = torch.tensor(xs)\n    wanted = torch.tensor(targets)\n    weight = torch.tensor(w0, requires_grad=True)\n    history_w = []\n    history_loss = []\n    step = 0\n    while step < steps:\n        history_w.append(float(weight))\n        pred = inputs * weight\n        mse = torch.mean((pred - wanted) ** 2)\n        history_loss.append(float(mse))\n        mse.backward()\n        with torch.no_grad():\n            weight.sub_(lr * weight.grad)\n            weight.grad = None\n        step += 1\n    return TrainResult(float(weight), history_w, history_loss)\n\n\ndef classify_curve(losses: list[float]) -> str:\n    """Name the shape of a loss curve: "converging", "slow", "oscillating" or "diverging".\n\n    diverging: the loss ends non-finite or far above where it started;\n    oscillating: it goes up and down repeatedly without a clear fall;\n    converging: it fell to a small fraction (< 10%) of its start;\n    slow: it falls steadily but has not got there.\n    Only reads ``losses``: the caller\'s list is not changed.\n    """\n    if len(losses) == 0:\n        raise ValueError("empty")\n    start = losses[0]\n    end = losses[-1]\n    if math.isnan(end) or math.isinf(end) or end > start * 2:\n        return "diverging"\n    rises = 0\n    for i in range(1, len(losses)):\n        if losses[i] > losses[i - 1]:\n            rises += 1\n    if len(losses) > 1 and rises * 3 >= len(losses) - 1 and end > start / 2:\n        return "oscillating"\n    return "converging" if end <= start / 10 else "slow"\n\n\ndef plot_losses(losses: list[float], path: str | Path) -> Path:\n    """Save a learning curve (loss per step, log scale when useful) as PNG bytes at exactly\n    ``path``, whatever its suffix (or none); returns the path. ``losses`` is not changed."""\n    import matplotlib\n\n    matplotlib.use("Agg")\n    from matplotlib import pyplot\n\n    out = Path(path)\n    figure = pyplot.figure()\n    pyplot.plot(list(losses))\n    pyplot.yscale("log" if all(v > 0 for v in losses) else "linear")\n    with open(out, "wb") as handle:\n        figure.savefig(handle, format="png")\n    pyplot.close(figure)\n    return out\n'

INDEPENDENT_B = '"""ch00, my own take."""\n\nfrom __future__ import annotations\n\nimport math\nfrom pathlib import Path\nfrom typing import NamedTuple\n\nimport torch\n\n\nclass TrainResult(NamedTuple):\n    w: float\n    ws: list[float]\n    losses: list[float]\n\n\ndef plot_losses(losses: list[float], path: str | Path) -> Path:\n    import matplotlib\n\n    matplotlib.use("Agg")\n    import matplotlib.pyplot as plt\n\n    fig = plt.figure(figsize=(4, 3))\n    axes = fig.add_subplot(1, 1, 1)\n    axes.semilogy(losses) if min(losses, default=1) > 0 else axes.plot(losses)\n    axes.set_title("loss")\n    fig.savefig(str(path), format="png")\n    plt.close(fig)\n    return Path(path)\n\n\ndef classify_curve(losses: list[float]) -> str:\n    if not losses:\n        raise ValueError("no losses")\n    a, b = losses[0], losses[-1]\n    finite = math.isfinite(b)\n    if (not finite) or b > a + a:\n        return "diverging"\n    deltas = [losses[k + 1] - losses[k] for k in range(len(losses) - 1)]\n    n_up = len([d for d in deltas if d > 0])\n    if deltas and 3 * n_up >= len(deltas) and 2 * b > a:\n        return "oscillating"\n    if 10 * b <= a:\n        return "converging"\n    return "slow"\n\n\ndef gradient_at(w: float, x: float, target: float) -> float:\n    t = torch.tensor(w, dtype=torch.float64).requires_grad_()\n    residual = t * x - target\n    g, = torch.autograd.grad(residual.pow(2), t)\n    return g.item()\n\n\ndef train_scalar(xs, targets, w0, lr, steps):\n    data = torch.tensor(xs, dtype=torch.float32)\n    labels = torch.tensor(targets, dtype=torch.float32)\n    param = torch.tensor(float(w0)).requires_grad_(True)\n    trace_w, trace_l = [], []\n    for _ in range(steps):\n        current = param.detach().item()\n        objective = (param * data - labels).pow(2).mean()\n        trace_w.append(current)\n        trace_l.append(objective.item())\n        objective.backward()\n        with torch.no_grad():\n            param.add_(param.grad, alpha=-lr)\n            param.grad.zero_()\n    return TrainResult(param.item(), trace_w, trace_l)\n'


def disguise(code: str, renames: dict[str, str]) -> str:
    """``code`` with names changed, comments dropped, docstrings reworded and its
    top-level functions in reverse order: what a student hiding a copy would do."""
    for old, new in renames.items():
        code = re.sub(rf"\b{old}\b", new, code)
    code = re.sub(r"  # .*", "", code)
    code = re.sub(r'"""[^"]*?"""', '"""Mine."""', code)
    head, *functions = re.split(r"\n\n\n(?=def )", code)
    return "\n\n\n".join([head, *reversed(functions)]) + "\n"


def with_stub_function(code: str, name: str) -> str:
    """``code`` with the function ``name`` put back as the stub has it (not attempted)."""

    def block(text):
        return re.search(rf"\ndef {name}\(.*?(?=\n\n\ndef |\Z)", text, re.S).group(0)

    return code.replace(block(code), block(STUB))


CLASS = {
    "alice": SOLUTION,
    "bob": disguise(
        SOLUTION,
        {
            "w_t": "param",
            "loss": "objective",
            "ws": "weights",
            "xs": "inputs",
            "first": "a",
            "last": "z",
            "ups": "rises",
            "steps": "deltas",
            "fig": "figure",
        },
    ),
    # two of alice's four functions, the other two left as the stub has them
    "carol": with_stub_function(with_stub_function(SOLUTION, "plot_losses"), "train_scalar"),
    "dan": INDEPENDENT_A,
    "hal": disguise(INDEPENDENT_A, {"param": "p", "history_w": "hw", "history_loss": "hl"}),
    "erin": INDEPENDENT_B,
    "frank": STUB,  # nothing done: the starter code is all they share
    "gina": STUB,
}
PLANTED = {("alice", "bob"), ("alice", "carol"), ("bob", "carol"), ("dan", "hal")}


def test_the_disguises_really_change_the_text():
    assert CLASS["bob"] != SOLUTION and "w_t" not in CLASS["bob"]
    assert CLASS["bob"].index("def plot_losses") < CLASS["bob"].index("def gradient_at")
    assert "p.grad" in CLASS["hal"] and "param" not in CLASS["hal"]
    assert CLASS["carol"].count("raise NotImplementedError") == 2
    assert "def plot_losses" in CLASS["carol"] and "ws.append" not in CLASS["carol"]


def test_planted_copies_are_flagged_and_nothing_else():
    sources = {s: {"ch00/training_loop.py": code} for s, code in CLASS.items()}
    found = similarity.find(sources, [CH00])
    assert not found.skipped
    assert found.compared == {"ch00": len(CLASS)}
    assert {(p.a, p.b) for p in found.pairs} == PLANTED
    assert all(p.chapter == "ch00" and p.score >= similarity.FLAG_AT for p in found.pairs)
    # a renamed and reordered copy is close to identical once names are blanked
    bob = next(p for p in found.pairs if (p.a, p.b) == ("alice", "bob"))
    assert bob.score > 0.9
    # a partial copy is flagged on the copier's side: most of carol's code is alice's
    carol = next(p for p in found.pairs if (p.a, p.b) == ("alice", "carol"))
    assert carol.share_b > 0.9 and carol.share_a < similarity.FLAG_AT


def test_independent_solutions_score_clearly_lower_than_copies():
    def score_of(a, b):
        return similarity.compare("ch00", a, CLASS[a], b, CLASS[b], STUB).score

    planted = [score_of(a, b) for a, b in PLANTED]
    independent = [score_of(a, b) for a, b in itertools.combinations(["alice", "dan", "erin"], 2)]
    assert min(planted) >= 0.8, planted
    assert max(independent) <= similarity.FLAG_AT - 0.1, independent
    assert max(independent) < min(planted) - 0.4
    # the starter code alone is nothing shared
    assert score_of("frank", "gina") == 0.0


# Whole modules written without sight of the reference, kept as correct alternatives.
INDEPENDENT = "written_independently.py"
WRITTEN_INDEPENDENTLY = sorted(
    ch for ch in index.chapters() if (index.chapter(ch).alternatives / INDEPENDENT).is_file()
)


def disguised(code: str) -> str:
    """Comments dropped, docstrings reworded, top-level definitions in reverse order."""
    code = re.sub(r"  # .*", "", code)
    code = re.sub(r'"""[^"]*?"""', '"""Mine."""', code, flags=re.S)
    head, *blocks = re.split(r"\n\n\n(?=def |class )", code)
    return "\n\n\n".join([head, *reversed(blocks)]) + "\n"


def test_six_chapters_keep_a_module_written_independently():
    assert len(WRITTEN_INDEPENDENTLY) >= 6, WRITTEN_INDEPENDENTLY


@pytest.mark.parametrize("chapter", WRITTEN_INDEPENDENTLY)
def test_an_independent_solution_is_not_flagged_and_disguised_copies_are(chapter):
    """Each chapter here has a correct solution written without sight of the reference
    (``grader/alternatives/chNN/written_independently.py``: written from the stub, the
    public tests and the reading alone; the selfcheck keeps it passing every test): the
    two are not flagged, with a margin, and a disguised copy of either one is."""
    ch = index.chapter(chapter)
    ref = (REPO / "solutions" / chapter / f"{ch.module}.py").read_text()
    stub = (REPO / "exercises" / chapter / f"{ch.module}.py").read_text()
    mine = (ch.alternatives / INDEPENDENT).read_text()
    independent = similarity.compare(chapter, "ref", ref, "mine", mine, stub).score
    copies = [
        similarity.compare(chapter, "a", code, "b", disguised(code), stub).score
        for code in (ref, mine)
    ]
    assert disguised(ref) != ref and disguised(mine) != mine
    assert independent <= similarity.FLAG_AT - 0.1, (chapter, independent)
    assert min(copies) >= similarity.FLAG_AT + 0.1, (chapter, copies)


def test_the_starter_code_is_boilerplate_not_evidence():
    with_stub = similarity.compare("ch00", "frank", STUB, "gina", STUB, STUB)
    without = similarity.compare("ch00", "frank", STUB, "gina", STUB, "")
    assert with_stub.score == 0.0 and without.score == 1.0


def results_for(students: dict[str, int]) -> list[score.StudentResult]:
    """One ch00 result per student with ``points`` of 10 (two tests of 5 and one of 0)."""
    specs = [
        score.TestSpec(
            f"exercises/ch00/test_t.py::test_{k}", "ch00", f"test_{k}", "ch00.1", 5, False, False
        )
        for k in range(2)
    ]
    found = []
    for student, points in students.items():
        records = {
            s.nodeid: {"outcome": "passed" if k < points // 5 else "failed", "message": "no"}
            for k, s in enumerate(specs)
        }
        found.append(score.score_student(student, specs, {"records": records}))
    return found


def test_pairs_are_shown_with_both_grades_in_the_summary_and_their_own_report(tmp_path):
    results = results_for({s: (10 if s in ("alice", "bob") else 5) for s in CLASS})
    sources = {s: {"ch00/training_loop.py": code} for s, code in CLASS.items()}
    found = similarity.find(sources, [CH00])
    report.write_all(tmp_path, results, ["ch00"], similar=found)
    summary = (tmp_path / "summary.md").read_text()
    assert "## Similar submissions" in summary
    assert re.search(r"\| ch00 \| alice \| 10/10 \| bob \| 10/10 \| \d+% \| \d+% \|", summary)
    assert re.search(r"\| ch00 \| dan \| 5/10 \| hal \| 5/10 \|", summary)
    own = (tmp_path / "_instructor" / "similarity.md").read_text()
    assert "8 submissions compared; 4 pair(s) flagged." in own
    assert "| ch00 | alice | 10/10 | carol | 5/10 |" in own
    assert "frank" not in own and "erin" not in own
    with open(tmp_path / "_instructor" / "similarity.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["student_a"], r["student_b"]) for r in rows} == PLANTED
    assert {r["grade_a"] for r in rows if r["student_a"] == "alice"} == {"10/10"}
    assert all(0 < float(r["share_a"]) <= 1 and int(r["chars"]) > 0 for r in rows)


def test_grading_goes_on_without_copydetect_and_says_the_report_was_skipped(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "copydetect", None)  # import copydetect -> ImportError
    results = results_for({"alice": 10, "bob": 5})
    specs = results[0].tests
    entries = {
        r.student: {
            "records": {
                t.spec.nodeid: {"outcome": "passed" if t.score else "failed"} for t in r.tests
            },
            "sources": {"ch00/training_loop.py": CLASS[r.student]},
        }
        for r in results
    }
    written = merge.write_outputs(
        tmp_path, [CH00], [t.spec for t in specs], entries, gradebook=False
    )
    assert [r.total for r in written] == [10, 5]
    assert (tmp_path / "grades.csv").read_text().splitlines()[1:] == [
        "alice,10,10,10",
        "bob,5,5,10",
    ]
    assert "Skipped: copydetect is not installed" in (tmp_path / "summary.md").read_text()
    own = (tmp_path / "_instructor" / "similarity.md").read_text()
    assert "Skipped: copydetect is not installed" in own


def test_merged_entries_carry_their_sources_into_the_report(tmp_path):
    results = results_for({s: 5 for s in CLASS})
    specs = [t.spec for t in results[0].tests]
    entries = {
        s: {"records": {}, "sources": {"ch00/training_loop.py": code}} for s, code in CLASS.items()
    }
    entries["zed"] = {"records": {}}  # an entry from an older journal: no sources, no pair
    merge.write_outputs(tmp_path, [CH00], specs, entries, gradebook=False)
    with open(tmp_path / "_instructor" / "similarity.csv") as f:
        assert {(r["student_a"], r["student_b"]) for r in csv.DictReader(f)} == PLANTED


def test_a_rerun_lexes_only_the_modules_that_changed(tmp_path, monkeypatch):
    sources = {s: {"ch00/training_loop.py": code} for s, code in CLASS.items()}
    first = similarity.find(sources, [CH00], tmp_path)
    lexed = []
    real = similarity._filtered
    monkeypatch.setattr(similarity, "_filtered", lambda code: lexed.append(code) or real(code))
    sources["erin"] = {"ch00/training_loop.py": CLASS["erin"] + "\nX = 1\n"}
    again = similarity.find(sources, [CH00], tmp_path)
    assert lexed == [sources["erin"]["ch00/training_loop.py"]]
    assert again.pairs == first.pairs


def test_the_lock_pins_what_copydetect_needs():
    from tests.test_structure import REPO, _closure

    pins = {
        re.sub(r"[-_.]+", "-", line.split("==")[0]).lower()
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    needed = _closure(["copydetect"])
    assert "copydetect" in needed and "tqdm" in needed
    assert needed <= pins, f"constraints.txt does not pin {sorted(needed - pins)}"
