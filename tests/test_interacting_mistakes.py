"""Mistakes that meet: two bug-zoo variants at once in one submission, in every chapter.

Where a task relies on another, a wrong answer in the task relied on and another in the task
that relies on it: the chapter's public task table names the first one as failing and the
later one as blocked by it, with every failure of the later one saying so first; no task
whose code is right is shown failing. Where no task relies on another, two wrong answers in
two independent tasks: both are shown failing (neither blocked), every other task is done,
and every failure's message matches the EXPECT of the variant in its own task (it names the
mistake its test met, not the other one). Every chapter keeps at least one pair.

The bug zoo keeps single mistakes (tests/test_chapters.py); this keeps pairs, where
feedback used to blame a task's right code or the other mistake's mechanism.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import cache

import pytest

from harness import index
from harness.plugin import property_only
from harness.selfcheck import apply_edits, variant_settings
from harness.target import REPO
from tests import warm_pytest

pytestmark = pytest.mark.timeout(600)

# Chapters whose other tasks' public tests are slow (worker processes, training loops,
# compiles): only the tasks a pair involves run there (the pair's tasks and every task that
# relies on one of them). Elsewhere the whole chapter runs, so a right task anywhere in it
# that a pair upsets is seen.
INVOLVED_ONLY = {"ch05", "ch09a", "ch10"}

# chapter, (wrong answer in the task relied on, its task), (wrong answer in the later task, its task)
DEPENDENT = [
    ("ch03", ("nonleaf_params", "ch03.2"), ("grads_accumulate", "ch03.7")),
    ("ch04", ("stats_as_plain_tensors", "ch04.4"), ("no_optimizer_state", "ch04.5")),
    ("ch05", ("seed_from_worker_id", "ch05.3"), ("drops_the_last_batch", "ch05.4")),
    ("ch05a", ("global_statistics", "ch05a.1"), ("validation_left_raw", "ch05a.4")),
    ("ch06", ("padding_on_one_side", "ch06.2"), ("head_sized_for_28", "ch06.3")),
    ("ch06a", ("mean_counts_padding", "ch06a.1"), ("scores_keep_the_unit_axis", "ch06a.2")),
    ("ch07", ("reshape_split", "ch07.1"), ("qkv_split_per_head", "ch07.6")),
    ("ch09b", ("keys_not_hashed", "ch09b.1"), ("unseeded_shuffle", "ch09b.2")),
    ("ch10", ("scores_not_scaled", "ch10.4"), ("no_position_embedding", "ch10.6")),
    ("ch10", ("no_residual", "ch10.5"), ("seeds_after_model", "ch10.8")),
]

# chapter, (a wrong answer, its task), (another, in a task that neither relies on the first
# nor is relied on by it)
INDEPENDENT = [
    ("ch00", ("gradient_by_hand", "ch00.1"), ("sum_not_mean", "ch00.2")),
    ("ch01", ("trace_records_inputs", "ch01.4"), ("divergence_zip_truncates", "ch01.5")),
    ("ch02", ("data_first_stage", "ch02.3"), ("accum_no_scale", "ch02.4")),
    ("ch08", ("unfreezes_everything", "ch08.1"), ("overfit_records_after_update", "ch08.3")),
    ("ch09", ("time_fn_mean", "ch09.1"), ("loop_syncs_every_step", "ch09.2")),
    ("ch09a", ("stats_without_reset", "ch09a.1"), ("guards_from_input_diff", "ch09a.4")),
]


def pair_id(pair) -> str:
    chapter, (one, _), (other, _) = pair
    return f"{chapter}:{one}+{other}"


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


@cache
def task_of_test(chapter_id: str) -> dict[str, str]:
    """Each public test function of a chapter and the task its ``task`` marker names."""
    path = index.chapter(chapter_id).public_tests
    found = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            marks = [
                d.args[0].value
                for d in node.decorator_list
                if isinstance(d, ast.Call) and getattr(d.func, "attr", None) == "task"
            ]
            assert len(marks) == 1, f"{path.name}::{node.name}: one task marker expected"
            found[node.name] = marks[0]
    return found


def involved(chapter_id: str, tasks: set[str]) -> set[str]:
    """``tasks`` and every task of the chapter whose tests run one of them."""
    return tasks | {
        t.id for t in index.chapter(chapter_id).tasks if tasks & set(index.relies_on(t.id))
    }


@dataclass
class Run:
    stdout: str
    table: dict[str, str]  # task -> its status line in the table
    failures: dict[str, tuple[str, str]]  # failing test (as pytest heads it) -> (task, text)


def table_of(out: str) -> dict[str, str]:
    rows = re.findall(r"^(ch\w+\.\d+) +\S+ +(.+)$", out.split("course tasks")[-1], re.MULTILINE)
    return dict(rows)


def failures_of(out: str, tasks: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Each failure's report as the student reads it, from its heading to the next section."""
    part = out.split("= FAILURES =")[-1] if "= FAILURES =" in out else ""
    part = re.split(r"^=+ .* =+$", part, maxsplit=1, flags=re.MULTILINE)[0]
    pieces = re.split(r"^_{3,} (\S+) _{3,}$", part, flags=re.MULTILINE)[1:]
    return {
        head: (tasks[head.split("[")[0]], text.strip())
        for head, text in zip(pieces[::2], pieces[1::2])
    }


def message(text: str) -> str:
    """What a failure report says it saw: without the frames it points at and pytest's
    comparison details (which can quote the test's own source)."""
    return property_only(re.split(r"\n\n(?:in your code|found by the test at:)", text)[0])


def run_public(chapter_id: str, impl: str, tasks: set[str]) -> Run:
    """The chapter's public tests on ``impl`` as a student runs them (only the tests of
    ``tasks`` in the chapters that are slow to run whole)."""
    chap = index.chapter(chapter_id)
    by_test = task_of_test(chapter_id)
    targets = [str(chap.public_tests)]
    if chapter_id in INVOLVED_ONLY:
        targets = [f"{chap.public_tests}::{name}" for name, t in by_test.items() if t in tasks]
    proc = warm_pytest.run(
        [*targets, "--impl", impl, "-q", "-p", "no:cacheprovider"],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=500,
    )
    return Run(proc.stdout, table_of(proc.stdout), failures_of(proc.stdout, by_test))


def failing(status: str) -> bool:
    """A row of the table that shows a task failing on its own account."""
    return re.fullmatch(r"\d+/\d+ tests pass", status) is not None


@pytest.mark.parametrize("chapter, first, later", DEPENDENT, ids=[pair_id(p) for p in DEPENDENT])
def test_the_later_task_waits_on_the_first_and_no_right_task_is_blamed(
    chapter, first, later, tmp_path
):
    (first_name, first_task), (later_name, later_task) = first, later
    assert first_task in index.relies_on(later_task), f"{later_task} does not rely on {first_task}"
    chap = index.chapter(chapter)
    impl = both_wrong(chap, [first_name, later_name], tmp_path)
    run = run_public(chapter, impl, involved(chapter, {first_task, later_task}))
    table, out = run.table, run.stdout[-4000:]
    assert failing(table.get(first_task, "")), (first_task, table, out)
    assert table.get(later_task, "").startswith(f"blocked by {first_task} "), (later_task, out)
    blamed = {
        t: s
        for t, s in table.items()
        if t not in (first_task, later_task) and s != "done" and not s.startswith("blocked by")
    }
    assert not blamed, f"tasks whose code is right shown failing: {blamed}\n{out}"
    lead = f"{later_task} {index.task(later_task).name} depends on {first_task} "
    later_failures = {h: text for h, (t, text) in run.failures.items() if t == later_task}
    assert later_failures, f"no failure of {later_task} was reported:\n{out}"
    unled = [h for h, text in later_failures.items() if not text.startswith(lead)]
    assert not unled, f"failures of {later_task} that do not start with {lead!r}: {unled}\n{out}"


@pytest.mark.parametrize("chapter, one, other", INDEPENDENT, ids=[pair_id(p) for p in INDEPENDENT])
def test_two_independent_mistakes_are_each_named_in_their_own_task(chapter, one, other, tmp_path):
    (one_name, one_task), (other_name, other_task) = one, other
    for a, b in ((one_task, other_task), (other_task, one_task)):
        assert a not in index.relies_on(b), f"{b} relies on {a}: not an independent pair"
    chap = index.chapter(chapter)
    impl = both_wrong(chap, [one_name, other_name], tmp_path)
    run = run_public(chapter, impl, {one_task, other_task})
    table, out = run.table, run.stdout[-4000:]
    for task in (one_task, other_task):
        assert failing(table.get(task, "")), (task, table, out)
    not_done = {t: s for t, s in table.items() if t not in (one_task, other_task) and s != "done"}
    assert not not_done, f"tasks whose code is right not shown done: {not_done}\n{out}"
    expect = {
        task: re.compile(variant_settings(chap.bugzoo / f"{name}.py")["EXPECT"], re.IGNORECASE)
        for name, task in (one, other)
    }
    for head, (task, text) in run.failures.items():
        assert task in expect, f"{head} of {task} failed, a task whose code is right:\n{text}"
        assert expect[task].search(message(text)), (
            f"{head} fails for the mistake in {task}, but its message does not name that "
            f"mechanism ({expect[task].pattern!r}):\n{text}"
        )


def test_every_chapter_keeps_a_pair_and_one_across_its_uses():
    kept = {p[0] for p in DEPENDENT + INDEPENDENT}
    missing = [c for c in index.chapters() if c not in kept]
    assert not missing, f"chapters without a pair of mistakes here: {missing}"
    with_uses = {c for c, chap in index.chapters().items() if any(t.uses for t in chap.tasks)}
    across = with_uses - {p[0] for p in DEPENDENT}
    assert not across, (
        f"chapters with uses but no pair across a task and one relying on it: {across}"
    )
