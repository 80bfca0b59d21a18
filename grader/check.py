"""A self-learner's score: public and hidden tests on their own ``exercises/`` (or
``--impl PATH``), in the same sandbox as the instructor's grading, with feedback; where
the machine has no sandbox (the ``none`` mode: macOS, Windows), in this one process.

    python -m grader check [chNN ...] [--impl PATH]

The grader proves itself first, as for ``grade`` (``grader.preflight``): a machine
where the reference solutions would not score full marks gets a message about the
machine, never a score.
"""

from __future__ import annotations

import sys
from concurrent.futures import Future, ThreadPoolExecutor

from grader import collect, grade, isolation, preflight, report, run, sandbox, score
from harness import index
from harness.target import resolve_impl


def main(chapters: list[str], impl: str = "exercises", limits: dict | None = None) -> int:
    chosen = grade.choose_chapters(chapters)
    folder = resolve_impl(impl)
    files, notes = collect.read_folder(folder, chosen)
    mode = isolation.mode()
    problems = preflight.environment_problems(chosen, mode)
    if problems:
        print(f"error: {preflight.Proof(False, mode, problems).refusal()}")
        return 2
    if mode == "none":  # macOS, Windows, or Linux without namespaces and Landlock
        print(
            f"note: no sandbox on this machine ({isolation.DESCRIPTION[mode]}): your code runs "
            "as you; the tests and the score are the same as in grading",
            file=sys.stderr,
        )
    if not any(c.hidden_tests.exists() for c in chosen):
        print(
            "no hidden tests here (a student release): checking the public tests only",
            file=sys.stderr,
        )
    print(f"checking {', '.join(c.id for c in chosen)} in {folder} ...", file=sys.stderr)
    lim = grade.default_limits(1, **(limits or {}))
    if mode == "none":
        result = _here(folder, chosen, lim, files, notes)
        return _show(result, chosen)
    with ThreadPoolExecutor(2) as pool, sandbox.parent_dir() as tmp:
        # the trusted collection is cached per user, as for `grade`: a student checking
        # again does not pay a second `import torch` beside the sandbox's
        plan = grade.make_plan(chosen, lim)
        specs = pool.submit(lambda: [score.TestSpec(**t) for t in grade.cached_specs(plan)])
        # checking the reference itself (--impl solutions): that run is the proof too
        twin = Future() if files == preflight.reference_files(chosen) else None
        proof = pool.submit(
            preflight.prove, chosen, specs, lim, plan.key, tmp, grade.cache(), False, twin
        )
        try:
            records, _ = run.grade_submission(files, chosen, specs, lim, tmp_root=tmp)
        except BaseException as exc:
            if twin:
                twin.set_exception(exc)
            raise
        if twin:
            twin.set_result(records)
        entry = {"records": {n: r.to_dict() for n, r in records.items()}, "notes": notes}
        result = score.score_student("you", specs.result(), entry)
        proof = proof.result()
    if not proof.ok:
        print(f"error: {proof.refusal()}")
        return 2
    return _show(result, chosen)


def _here(folder, chosen, lim, files, notes) -> score.StudentResult:
    """Without a sandbox: the tests in this process (``grader.inprocess``), no proof."""
    from grader import inprocess

    specs = [score.TestSpec(**t) for t in grade.cached_specs(grade.make_plan(chosen, lim))]
    submitted = [c for c in chosen if f"{c.id}/{c.module}.py" in files]
    ran = {c.id for c in submitted}
    expected = [t.nodeid for t in specs if run.chapter_of(t.nodeid) in ran]
    records = inprocess.grade_here(folder, submitted, expected) if submitted else {}
    for c in chosen:
        if c.id not in ran:
            records |= {
                t.nodeid: run.not_submitted(c) for t in specs if run.chapter_of(t.nodeid) == c.id
            }
    entry = {"records": {n: r.to_dict() for n, r in records.items()}, "notes": notes}
    return score.score_student("you", specs, entry)


def _show(result: score.StudentResult, chosen: list[index.Chapter]) -> int:
    """Feedback, the task table and the scores; the exit code."""
    states = task_states(result)
    for t in result.tests:  # a blocked task's failures say first what they wait on
        state = states.get(t.spec.task)
        if t.status == "failed" and state is not None and state.status == "blocked":
            t.output = f"{state.lead()}. {t.output}"
    print(report.feedback_md(result, [c.id for c in chosen]))
    print("\n".join(task_table(states)))
    for c in chosen:
        got, most = result.chapter_score(c.id)
        status = result.chapter_status(c.id)
        extra = "" if status == "graded" else f"  ({status})"
        print(f"{c.id:<6} {got:>4} / {most:<4} {c.title}{extra}")
    print(f"total  {result.total:>4} / {result.max_total}")
    if result.not_graded:
        print(
            f"warning: {len(result.not_graded)} test(s) were not graded (the grader's problem, "
            "not your code's); run the check again"
        )
        return 3
    return 0


def task_states(result: score.StudentResult) -> dict[str, index.TaskState]:
    """Per task, as the chapter's own pytest run decides it: done, failing, not started, or
    blocked by the first task it relies on that fails or is unwritten."""
    shown = {"passed": "passed", "failed": "failed", "not_here": "skipped"}
    outcomes = [
        # the full message names the task whose TODO a test met (a hidden test's shown
        # text does not); it only picks which task the table names, and is not shown
        index.TestOutcome(t.spec.task, shown[t.status], t.category, t.detail or t.output)
        for t in result.tests
        if t.spec.task and t.status in shown
    ]
    return index.task_states(outcomes)


def task_table(states: dict[str, index.TaskState]) -> list[str]:
    lines = ["## Tasks", ""]
    for task_id in sorted(states, key=index.task_key):
        try:
            name = index.task(task_id).name
        except KeyError:
            name = "?"
        lines.append(f"{task_id:<9} {name:<28} {states[task_id].describe()}")
    return lines + [""]
