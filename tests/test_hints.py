"""Hints in two levels: the first names the mechanism to look at and holds no code; the
second, the fix itself, comes only on request and is not readable in course/chNN.toml by
a student who only glances at it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib

import pytest

from harness import index
from harness.target import REPO

TASKS = [t for c in index.chapters().values() for t in c.tasks]
# Words that look like code but are names of things: the library, the language, formats.
NAMES = {"PyTorch"}


def code_in(hint: str) -> list[str]:
    """What in ``hint`` reads as code: operators, brackets, calls, dotted or snake_case
    identifiers, camelCase names, backticks, comparisons and arithmetic between terms."""
    found = re.findall(r"[()\[\]{}=<>+*/\\`@^|&~%#_]", hint)
    found += re.findall(r"\w+\.\w+", hint)  # obj.attr, torch.no_grad
    found += [w for w in re.findall(r"\b[A-Za-z]+[a-z][A-Z]\w*", hint) if w not in NAMES]
    found += re.findall(r"\S\s-\s?\S|\s-\w", hint)  # x - y, -inf (hyphenated words are fine)
    return found


@pytest.mark.parametrize("hint", ["Under torch.no_grad(): p -= lr * p.grad, in place.",
                                  "and (p - before).abs().max()", "use nn.ModuleList",
                                  "fill with -inf", "call requires_grad", "a TorchFunctionMode",
                                  "x0 > 0", "the `view`", "dim=1"])  # fmt: skip
def test_the_code_check_catches_code(hint):
    assert code_in(hint), f"code_in missed the code in {hint!r}"


@pytest.mark.parametrize(
    "hint",
    ["A log-sum-exp of the channels-last batch, seed-to-seed, in PyTorch's own words.",
     "Two linear layers with nothing between them collapse into one; what belongs there?"],
)  # fmt: skip
def test_the_code_check_leaves_prose_alone(hint):
    assert not code_in(hint)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_a_first_level_hint_points_at_the_mechanism_without_code(task):
    assert task.hint.strip(), f"{task.id} has no hint"
    code = code_in(task.hint)
    assert not code, (
        f"{task.id}'s hint (course/{task.id.split('.')[0]}.toml) holds code {code}: the first "
        "level names the mechanism to look at in words; the fix belongs in fix_rot13"
    )
    assert len(task.hint) <= 260, f"{task.id}'s hint is {len(task.hint)} characters: one pointer"


@pytest.mark.parametrize("chapter", list(index.chapters()))
def test_every_task_has_a_fix_and_it_is_not_in_plain_sight(chapter):
    raw = tomllib.loads((REPO / "course" / f"{chapter}.toml").read_text(encoding="utf-8"))
    text = (REPO / "course" / f"{chapter}.toml").read_text(encoding="utf-8")
    for entry, task in zip(raw["task"], index.chapter(chapter).tasks, strict=True):
        assert "fix" not in entry, f"{task.id}: the fix is stored as fix_rot13, never in clear"
        assert task.fix and task.fix != task.hint, f"{task.id} has no second-level hint"
        assert task.fix not in text, f"{task.id}'s fix is readable in course/{chapter}.toml"


def test_grader_hint_shows_the_fix_on_request():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = [sys.executable, "-m", "grader", "hint", "ch03.5"]
    proc = subprocess.run(run, cwd=REPO, capture_output=True, text=True, env=env)
    task = index.task("ch03.5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert task.hint in proc.stdout and task.fix in proc.stdout, proc.stdout
    assert "course/ch03.md#" in proc.stdout, proc.stdout
    one = subprocess.run([*run, "--level", "1"], cwd=REPO, capture_output=True, text=True, env=env)
    assert task.hint in one.stdout and task.fix not in one.stdout, one.stdout
    bad = subprocess.run([*run[:-1], "ch3.5"], cwd=REPO, capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "ch03.5" in bad.stdout, bad.stdout
