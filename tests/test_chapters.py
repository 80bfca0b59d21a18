"""The course's tests can tell right from wrong: per chapter, every public and hidden
test fails on the stubs, passes on the solutions and on every correct alternative, and
every bug-zoo variant is rejected with a message that names its mechanism."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import defaultdict

import pytest

from harness import index
from harness.plugin import NOT_GRADED_HERE
from harness.selfcheck import variant_settings
from harness.target import REPO

CHAPTERS = list(index.chapters())
VARIANTS = [
    pytest.param(ch, path.stem, id=f"{ch}/{path.stem}")
    for ch in CHAPTERS
    for path in sorted(index.chapter(ch).bugzoo.glob("*.py"))
]
ALTERNATIVES = [
    pytest.param(ch, path.stem, id=f"{ch}/{path.stem}")
    for ch in CHAPTERS
    for path in sorted(index.chapter(ch).alternatives.glob("*.py"))
]
MIN_VARIANTS = 4
MIN_ALTERNATIVES = 2
slow = pytest.mark.timeout(1800)  # waits on a chapter's selfcheck subprocess


def _not_graded_here(o: dict) -> bool:
    return o["outcome"] == "skipped" and NOT_GRADED_HERE in o["message"]


def _not_passing(outcomes) -> list[dict]:
    """Outcomes other than a pass (a CUDA test skipped on a machine without one is fine)."""
    return [o for o in outcomes if o["outcome"] != "passed" and not _not_graded_here(o)]


def _describe(outcomes) -> str:
    return "\n".join(f"  {o['outcome']:>7} {o['nodeid']}: {o['message'][:300]}" for o in outcomes)


@slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_test_fails_on_the_stubs(selfcheck, chapter):
    outcomes = selfcheck(chapter)["stubs"]
    assert outcomes, f"{chapter}: no tests were collected"
    wrong = [o for o in outcomes if o["outcome"] != "failed" and not _not_graded_here(o)]
    assert not wrong, f"{chapter}: these tests did not fail on the stubs:\n{_describe(wrong)}"


@slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_stub_failures_are_one_line_todos(selfcheck, chapter):
    """Build and inspect tasks fail with 'TODO: implement ... see course/chNN.md#...';
    repair tasks fail on the broken program's own behaviour."""
    chap = index.chapter(chapter)
    repair = {t.id for t in chap.tasks if t.kind == "repair"}
    bad = [
        o
        for o in selfcheck(chapter)["stubs"]
        if o["outcome"] == "failed"
        and o["task"] not in repair
        and not re.match(
            rf"TODO: implement {chapter}\.\d+ \w+ .*course/{chapter}\.md#\S+", o["message"]
        )
    ]
    assert not bad, (
        f"{chapter}: stub failures of build/inspect tasks should read 'TODO: implement <task> <name> — "
        f"see course/{chapter}.md#<anchor>':\n{_describe(bad)}"
    )


@slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_test_passes_on_the_solutions(selfcheck, chapter):
    outcomes = selfcheck(chapter)["solutions"]
    wrong = _not_passing(outcomes)
    assert outcomes and not wrong, f"{chapter}: the reference solution fails:\n{_describe(wrong)}"


@slow
@pytest.mark.parametrize("chapter, variant", VARIANTS)
def test_bugzoo_variant_is_rejected_naming_its_mechanism(selfcheck, chapter, variant):
    result = selfcheck(chapter)["variants"][variant]
    expect = result["expect"]
    assert expect, (
        f"{chapter}/{variant}.py must declare EXPECT, the mechanism a failure message names"
    )
    failed = [o for o in result["outcomes"] if o["outcome"] in ("failed", "error")]
    assert failed, (
        f"{chapter}/{variant}: no test fails on this wrong answer:\n{_describe(result['outcomes'])}"
    )
    naming = [o for o in failed if re.search(expect, o["message"], re.IGNORECASE)]
    assert naming, (
        f"{chapter}/{variant}: tests fail, but no failure message matches {expect!r}:\n{_describe(failed)}"
    )
    if result.get("task"):
        blamed = [o for o in naming if o["task"] == result["task"]]
        assert blamed, (
            f"{chapter}/{variant}: the mistake is in {result['task']}, but only tests of "
            f"{sorted({o['task'] for o in naming})} name it:\n{_describe(naming)}"
        )


@slow
@pytest.mark.parametrize("chapter, alternative", ALTERNATIVES)
def test_a_correct_alternative_passes_every_test(selfcheck, chapter, alternative):
    outcomes = selfcheck(chapter)["alternatives"][alternative]
    wrong = _not_passing(outcomes)
    assert outcomes and not wrong, (
        f"{chapter}/{alternative}: a correct answer the reference does not happen to write "
        f"fails these tests (a test checks one implementation, not the contract):\n"
        f"{_describe(wrong)}"
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_chapter_keeps_correct_alternatives(chapter):
    found = sorted(index.chapter(chapter).alternatives.glob("*.py"))
    assert len(found) >= MIN_ALTERNATIVES, (
        f"{chapter}: {len(found)} correct alternatives in grader/alternatives/{chapter}/; keep at "
        f"least {MIN_ALTERNATIVES} right answers the reference does not write (CONTRIBUTING.md)"
    )
    for path in found:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{path}: say what differs and why it is still right"
        settings = variant_settings(path)
        assert not settings["EXPECT"], f"{path}: an alternative passes every test: no EXPECT"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_chapter_has_a_bug_zoo(chapter):
    variants = sorted(index.chapter(chapter).bugzoo.glob("*.py"))
    assert len(variants) >= MIN_VARIANTS, (
        f"{chapter}: {len(variants)} bug-zoo variants; the spec's wrong answers plus two more "
        f"plausible ones make at least {MIN_VARIANTS}"
    )
    for path in variants:
        settings = variant_settings(path)
        assert settings["EXPECT"], f"{path} declares no EXPECT"
        re.compile(settings["EXPECT"])


@slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_test_has_a_task_and_points_add_up(selfcheck, chapter):
    chap = index.chapter(chapter)
    outcomes = selfcheck(chapter)["solutions"]
    untagged = [o["nodeid"] for o in outcomes if o["task"] not in {t.id for t in chap.tasks}]
    assert not untagged, f"{chapter}: tests without a task marker of this chapter: {untagged}"
    points = defaultdict(int)
    for o in outcomes:
        points[o["task"]] += o["points"]
    for t in chap.tasks:
        assert points[t.id] == t.points, (
            f"{t.id} {t.name}: course/{chapter}.toml says {t.points} points, its tests carry {points[t.id]}"
        )
    hidden = {o["task"] for o in outcomes if "grader/hidden" in o["nodeid"]}
    public = {o["task"] for o in outcomes if o["nodeid"].startswith("exercises/")}
    for t in chap.tasks:
        assert t.id in public, (
            f"{t.id} {t.name} has no public test: students need one to work against"
        )
        assert t.id in hidden, (
            f"{t.id} {t.name} has no hidden test: the public cases could be hard-coded"
        )


FAKE_CHECKS = """
import os, sys
from harness import selfcheck

def fake(chapter):
    print("a chapter's print", chapter)  # must not reach the report stream
    os.write(1, b"and a write to fd 1\\n")
    if chapter == "raises":
        raise KeyError(chapter)
    if chapter == "dies":
        os._exit(3)
    return {"chapter": chapter, "stubs": []}

selfcheck.check_chapter = fake
sys.exit(selfcheck.main(["a", "raises", "dies", "b", "--jobs", "2"]))
"""


def test_several_chapters_report_a_json_line_each_whatever_a_chapter_does(tmp_path):
    """The forked checks behind the ``selfcheck`` fixture: every chapter gets its line,
    prints cannot break the stream, and a chapter that raises or dies is an error line,
    not a lost report."""
    proc = subprocess.run(
        [sys.executable, "-c", FAKE_CHECKS], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    by_chapter = {line["chapter"]: line for line in lines}
    assert sorted(by_chapter) == ["a", "b", "dies", "raises"] and len(lines) == 4, proc.stdout
    assert by_chapter["a"] == {"chapter": "a", "stubs": []}
    assert "KeyError" in by_chapter["raises"]["error"]
    assert by_chapter["dies"]["error"].startswith("ended with 3")
    assert proc.returncode == 1
    assert "a chapter's print" in proc.stderr


STOPS_EARLY = """
import json
from harness import index
from harness.runner import run_tests

chapter = index.chapter("ch00")
paths = [p for p in (chapter.public_tests, chapter.hidden_tests) if p.exists()]
enough = (None, lambda o: o.outcome == "failed", lambda o: False)
print(json.dumps([[o.nodeid for o in run_tests(paths, "exercises", enough=e)] for e in enough]))
"""


def test_a_variants_run_stops_at_the_first_outcome_that_proves_enough():
    """What lets a bug-zoo variant's run stop early: the runner's ``enough``. Nothing is
    cut from a run that never shows enough."""
    proc = subprocess.run(
        [sys.executable, "-c", STOPS_EARLY], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    everything, first_failure, never = json.loads(proc.stdout.splitlines()[-1])
    assert len(everything) > 1
    assert first_failure == everything[:1]
    assert never == everything


CHOSEN = """
import json
from pathlib import Path
from harness import index, selfcheck
from harness.runner import run_tests

chapter = index.chapter("ch05a")
paths = [p for p in (chapter.public_tests, chapter.hidden_tests) if p.exists()]
touched = {}
run_tests(paths, "solutions", ["-k", "scaling_step or fits_on_training or flip"], record=touched)
flip = Path("{tmp}") / "flip.py"
flip.write_text('def flip_with_label(image, label):\\n    return image, label\\n')
edit = Path("{tmp}") / "edit.py"
edit.write_text('EDITS = [("def make_stripe_task", "def make_stripe_task")]\\n')
chosen = {
    name: selfcheck.tests_reaching(touched, selfcheck.names_reached(chapter, path))
    for name, path in (("flip", flip), ("edit", edit))
}
print(json.dumps({"touched": {k: sorted(v) for k, v in touched.items()}, "chosen": chosen}))
"""


def test_an_alternative_runs_every_test_that_reads_what_it_changes(tmp_path):
    """An alternative's run is cut to the tests that read, on the solutions, a name it can
    change: directly, through a definition that names it (train_with_pipeline calls
    make_stripe_task), or through a test helper's cache, answered in a later test from a
    run computed in an earlier one (ch05a's ``pipeline``)."""
    code = CHOSEN.replace("{tmp}", str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.splitlines()[-1])
    touched, chosen = found["touched"], found["chosen"]
    cached = next(n for n in touched if "fits_on_training_images_only" in n)
    assert "train_with_pipeline" in touched[cached], touched[cached]  # answered by the cache
    flips = {n for n, names in touched.items() if "flip_with_label" in names}
    assert flips and set(chosen["flip"]) == flips, chosen["flip"]
    scaling = next(n for n in touched if "scaling_step" in n)
    assert "make_stripe_task" not in touched[scaling]  # it reaches it through the pipeline
    assert {cached, scaling} <= set(chosen["edit"]), chosen["edit"]
    assert not flips & set(chosen["edit"]), chosen["edit"]
