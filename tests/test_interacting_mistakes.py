"""Mistakes that meet: a wrong answer in a task and another in a task that relies on it,
both in one submission (two bug-zoo variants at once). The chapter's public task table
names the first one as failing and the later one as blocked by it, with every failure of
the later one saying so first; no task whose code is right is shown failing.

The bug zoo keeps single mistakes (tests/test_chapters.py); this keeps pairs across
dependent tasks, where feedback used to blame the later task's right code.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from harness import index
from harness.selfcheck import apply_edits, variant_settings
from harness.target import REPO

pytestmark = pytest.mark.timeout(600)

# chapter, (wrong answer in the task relied on, its task), (wrong answer in the later task, its task)
PAIRS = [
    ("ch03", ("nonleaf_params", "ch03.2"), ("grads_accumulate", "ch03.7")),
    ("ch06", ("padding_on_one_side", "ch06.2"), ("head_sized_for_28", "ch06.3")),
    ("ch07", ("reshape_split", "ch07.1"), ("qkv_split_per_head", "ch07.6")),
]


def both_wrong(chapter: index.Chapter, names: list[str], folder) -> str:
    """A submission folder whose module is the reference with every named variant in it."""
    module = (REPO / "solutions" / chapter.id / f"{chapter.module}.py").read_text()
    variants = [chapter.bugzoo / f"{name}.py" for name in names]
    for variant in variants:
        module = apply_edits(module, variant_settings(variant)["EDITS"], variant.name)
    module += "".join(f"\n\n# ---- {v.name} ----\n{v.read_text()}" for v in variants)
    (folder / chapter.id).mkdir(parents=True)
    (folder / chapter.id / f"{chapter.module}.py").write_text(module)
    return str(folder)


def table_of(out: str) -> dict[str, str]:
    rows = re.findall(r"^(ch\w+\.\d+) +\S+ +(.+)$", out.split("course tasks")[-1], re.MULTILINE)
    return dict(rows)


@pytest.mark.parametrize("chapter, first, later", PAIRS, ids=[p[0] for p in PAIRS])
def test_the_later_task_waits_on_the_first_and_no_right_task_is_blamed(
    chapter, first, later, tmp_path
):
    (first_name, first_task), (later_name, later_task) = first, later
    assert first_task in index.relies_on(later_task), f"{later_task} does not rely on {first_task}"
    chap = index.chapter(chapter)
    impl = both_wrong(chap, [first_name, later_name], tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(chap.public_tests), "--impl", impl, "-q"]
        + ["-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=500,
    )
    table = table_of(proc.stdout)
    assert re.fullmatch(r"\d+/\d+ tests pass", table.get(first_task, "")), (first_task, table)
    assert table.get(later_task, "").startswith(f"blocked by {first_task} "), (later_task, table)
    blamed = {
        t: s
        for t, s in table.items()
        if t not in (first_task, later_task) and s != "done" and not s.startswith("blocked by")
    }
    assert not blamed, f"tasks whose code is right shown failing: {blamed}\n{proc.stdout[-3000:]}"
    lead = f"{later_task} {index.task(later_task).name} depends on {first_task} "
    assert lead in proc.stdout, proc.stdout[-3000:]
