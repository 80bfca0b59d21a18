"""Write what the grades say: ``grades.csv``, per student ``results.json`` (Gradescope)
and ``feedback.md``, the instructor's ``summary.md`` with ``score_distribution.png`` and
``task_losses.png`` (``grader/figures.py``), ``_instructor/hidden_failures.md`` (the full
messages of failed hidden tests) and, given one, the similarity report
(``grader/similarity.py``).

One visibility policy everywhere: what a student may see of a hidden test (its
statement and how it failed) is the same in ``results.json`` and ``feedback.md``; the
full message is in the instructor's file only. Everything here is a pure function of
the scored results, so a merged set of shards writes exactly what one run writes.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from grader import figures, similarity
from grader.figures import BINS, score_figure  # noqa: F401 - moved to figures.py
from grader.score import StudentResult, TestResult
from harness import index

VISIBILITY = {False: "visible", True: "after_published"}
INSTRUCTOR = "_instructor"  # student ids never start with "_": no student folder collides
# The run's own outputs beside the student folders; a student whose id is one of them
# gets the folder "_student-<id>" instead (said on stderr and in the summary).
RUN_FILES = {
    "grades.csv",
    "grades_status.csv",
    "summary.md",
    "gradebook.db",
    "score_distribution.png",
    "task_losses.png",
    "nbgrader_grades.csv",
    "demo-submissions",
}


def student_folder(student: str) -> str:
    """The folder of ``student``'s outputs: their id, unless that is one of the run's files."""
    return f"_student-{student}" if student.lower() in RUN_FILES else student


def grades_csv(results: list[StudentResult], chapters: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["student", *chapters, "total", "max"])
    for r in results:
        writer.writerow(
            [r.student, *(r.chapter_score(c)[0] for c in chapters), r.total, r.max_total]
        )
    return buf.getvalue()


def grades_status_csv(results: list[StudentResult], chapters: list[str]) -> str:
    """``grades.csv``'s companion: per student and chapter, whether its points are a
    grade (``graded``), a chapter the student did not submit (``not submitted``: 0 points)
    or not a verdict yet (``not graded``: the grader's failure; grading again runs it)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["student", *chapters, "tests_not_graded"])
    for r in results:
        writer.writerow([r.student, *(r.chapter_status(c) for c in chapters), len(r.not_graded)])
    return buf.getvalue()


def _status(t: TestResult) -> str:
    # Gradescope knows "passed" and "failed" only.
    return "passed" if t.status == "passed" else "failed"


def results_notes(result: StudentResult) -> list[str]:
    """The submission-wide notes a student sees, with what was not graded and why."""
    notes = list(result.notes)
    if result.not_graded:
        notes.insert(
            0,
            f"{len(result.not_graded)} test(s) were not graded because of a problem on the "
            "grader's side, not in your code; they will be graded when the grader runs again "
            "(tell your instructor if this stays).",
        )
    cuda = [t for t in result.tests if t.status == "not_here"]
    if cuda:
        notes.append(f"{len(cuda)} CUDA test(s) were not run here (no GPU); they count 0 of 0.")
    return notes


def results_json(result: StudentResult) -> dict:
    """Gradescope's results.json: https://gradescope-autograders.readthedocs.io/en/latest/specs/
    A CUDA test that could not run on this machine is left out of ``tests`` (Gradescope
    would show it as a failure) and counted in ``output``."""
    tests, numbers = [], defaultdict(int)
    chapter_ids = list(index.chapters())
    for t in result.tests:
        numbers[t.spec.chapter] += 1
        if t.status == "not_here":
            continue
        chapter_no = chapter_ids.index(t.spec.chapter) if t.spec.chapter in chapter_ids else 0
        entry = {
            "name": f"{t.spec.chapter} {'hidden' if t.spec.hidden else 'public'}: {t.spec.name}",
            "number": f"{chapter_no}.{numbers[t.spec.chapter]}",
            "score": t.score,
            "max_score": t.max_score,
            "status": _status(t),
            "output": t.output,
            "visibility": VISIBILITY[t.spec.hidden],
        }
        if t.spec.task:
            entry["tags"] = [t.spec.task]
        tests.append(entry)
    return {
        "score": result.total,
        "execution_time": round(result.execution_time),
        "output": "\n".join(results_notes(result)),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


SAME_REASON_GROUP = 3  # this many tests failing with one message are reported as one line


def feedback_md(result: StudentResult, chapters: list[str]) -> str:
    lines = [f"# Feedback for {result.student}", ""]
    lines.append(f"Total: **{result.total} / {result.max_total}** points.")
    lines.append("")
    notes = [n for n in results_notes(result) if "CUDA" not in n]
    if notes:
        lines += ["About your submission:", ""] + [f"- {n}" for n in notes] + [""]
    for chapter in chapters:
        got, most = result.chapter_score(chapter)
        mine = [t for t in result.tests if t.spec.chapter == chapter]
        title = index.chapters()[chapter].title if chapter in index.chapters() else chapter
        status = result.chapter_status(chapter)
        lines += [f"## {chapter} — {title}: {got} / {most}", ""]
        if status == "not submitted":
            module = mine[0].output.split("no ", 1)[-1] if mine else "its module"
            lines += [f"Not submitted: your submission has no {module}", ""]
            continue
        not_graded = [t for t in mine if t.status == "not_graded"]
        if not_graded:
            lines.append(f"Not graded yet ({len(not_graded)}), the grader's problem, not yours:")
            reasons = dict.fromkeys(t.output for t in not_graded)
            lines += [f"- {why}" for why in list(reasons)[:3]]
            lines.append("")
        passed = [t for t in mine if t.status == "passed" and t.max_score]
        failed = [t for t in mine if t.status == "failed" and t.max_score]
        other = [t for t in mine if not t.max_score and t.status != "not_graded"]
        if passed:
            lines.append(f"Passed ({len(passed)}):")
            lines += [f"- {_label(t)} ({t.score} pt)" for t in passed]
            lines.append("")
        if failed:
            lines.append(f"Failed ({len(failed)}):")
            # A missing or unimportable module fails every test the same way: say it once.
            by_reason: dict[str, list] = {}
            for t in failed:
                by_reason.setdefault(t.output, []).append(t)
            for why, group in by_reason.items():
                why = why.replace("\n", "\n  ")
                if len(group) >= SAME_REASON_GROUP:
                    pts = sum(t.spec.points for t in group)
                    names = ", ".join(_label(t) for t in group)
                    lines.append(f"- {len(group)} tests (0 / {pts} pt) failed the same way: {why}")
                    lines.append(f"  ({names})")
                else:
                    lines += [f"- {_label(t)} (0 / {t.spec.points} pt): {why}" for t in group]
            lines.append("")
            hints = [h for h in dict.fromkeys(_hint(t.spec.task) for t in failed) if h]
            if hints:
                lines += ["Where to look:", ""] + [f"- {h}" for h in hints] + [""]
        if other:
            lines.append(f"CUDA tests, not counted ({len(other)}):")
            lines += [f"- {_label(t)}: {t.output.splitlines()[0]}" for t in other]
            lines.append("")
    return "\n".join(lines)


def _label(t) -> str:
    return f"{'hidden' if t.spec.hidden else 'public'} `{t.spec.name}`"


def _hint(task_id: str | None) -> str:
    if not task_id:
        return ""
    try:
        task = index.task(task_id)
    except KeyError:
        return ""
    return f"{task.id} {task.name}: {task.hint} (read {task.anchor})"


# ---- the instructor's view ----------------------------------------------------------

CLUSTERS_SHOWN = 12
NOTES_SHOWN = 30
NOISE = (
    "TODO: implement",
    "not found under",
    "not implemented yet",
    "not graded on this machine",
    "not submitted",
    "not graded",
)


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2 if n else 0.0


def summary_md(
    results: list[StudentResult],
    chapters: list[str],
    similar: similarity.Similarity | None = None,
) -> str:
    """A page that stays short at 500 students: per chapter, per task, the few failure
    clusters that matter, and the submissions that need a look."""
    n = len(results)
    lines = ["# Grading summary", "", f"{n} submissions.", ""]
    unfinished = [r for r in results if r.not_graded]
    if unfinished:
        lines += [
            f"**{len(unfinished)} submission(s) have tests that were not graded** (the "
            "grader's own failure: a sandbox that did not start, a machine too busy; see "
            "`grades_status.csv`). Their points are not final: run the same command again "
            "to grade just those tests.",
            "",
        ]
    lines += [
        "Zero counts graded chapters only; *not submitted* (no module: 0 points) and "
        "*not graded* (no verdict yet) are counted apart.",
        "",
        "| chapter | mean | median | min | max | out of | full marks | zero | not submitted "
        "| not graded |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in chapters:
        pairs = [r.chapter_score(c) for r in results]
        states = [r.chapter_status(c) for r in results]
        scores = [got for got, _ in pairs]
        most = max((m for _, m in pairs), default=0)
        if scores:
            full = sum(got == m and m > 0 for got, m in pairs)
            zero = sum(got == 0 and s == "graded" for got, s in zip(scores, states))
            lines.append(
                f"| {c} | {sum(scores) / n:.1f} | {_median(scores):g} | {min(scores)} | "
                f"{max(scores)} | {most} | {full} | {zero} | {states.count('not submitted')} "
                f"| {states.count('not graded')} |"
            )
    lines += ["", "![score distribution per chapter](score_distribution.png)", ""]
    lines += _tasks_table(results)
    lines += ["![points lost per task, and why](task_losses.png)", ""]
    if similar is not None:
        lines += similarity.summary_lines(similar, results)
    lines += _clusters(results)
    lines += _needs_a_look(results)
    return "\n".join(lines) + "\n"


def _tasks_table(results: list[StudentResult]) -> list[str]:
    lost: Counter = Counter()
    most: Counter = Counter()
    done: Counter = Counter()
    untouched: Counter = Counter()
    for r in results:
        per_task: dict[str, list[TestResult]] = defaultdict(list)
        for t in r.tests:
            if t.spec.task and t.max_score:
                per_task[t.spec.task].append(t)
        for task, tests in per_task.items():
            most[task] = sum(t.max_score for t in tests)
            lost[task] += sum(t.max_score - t.score for t in tests)
            done[task] += all(t.status == "passed" for t in tests)
            untouched[task] += all(
                t.status == "not_submitted" or (t.status != "passed" and t.output.startswith(NOISE))
                for t in tests
            )
    lines = [
        "## Where the class loses points (by task)",
        "",
        "| task | name | points | lost (class) | done | not started |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for task in sorted(most, key=lambda t: (-lost[t], t)):
        try:
            name = index.task(task).name
        except KeyError:
            name = "?"
        lines.append(
            f"| {task} | {name} | {most[task]} | {lost[task]} | {done[task]} | {untouched[task]} |"
        )
    return lines + [""]


def _clusters(results: list[StudentResult]) -> list[str]:
    """Identical failures shared by several students, biggest first, without the
    not-started noise; the rest is counted, not listed."""
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in results:
        for t in r.tests:
            if t.status == "failed" and t.max_score and not t.output.startswith(NOISE):
                first = t.output.splitlines()[0] if t.output else ""
                groups[(t.spec.task or "?", first)].add(r.student)
    shared = sorted(
        ((k, v) for k, v in groups.items() if len(v) > 1), key=lambda kv: (-len(kv[1]), kv[0])
    )
    lines = ["## Failures shared by several students", ""]
    if not shared:
        return lines + ["No failure message is shared by two or more students.", ""]
    for (task, first), students in shared[:CLUSTERS_SHOWN]:
        who = sorted(students)
        names = ", ".join(who[:8]) + (f" and {len(who) - 8} more" if len(who) > 8 else "")
        lines.append(f"- **{len(who)} students**, {task}: {first[:300]}")
        lines.append(f"  ({names})")
    if len(shared) > CLUSTERS_SHOWN:
        lines.append(f"- ... and {len(shared) - CLUSTERS_SHOWN} smaller clusters")
    return lines + [""]


def _needs_a_look(results: list[StudentResult]) -> list[str]:
    flagged = [r for r in results if r.notes or r.not_graded]
    if not flagged:
        return []
    lines = ["## Submissions with notes (refused files, restarts, tampering, moved folders)", ""]
    for r in flagged[:NOTES_SHOWN]:
        notes = results_notes(r)[: len(r.notes) + bool(r.not_graded)]
        lines.append(f"- {r.student}: {'; '.join(notes)[:300]}")
    if len(flagged) > NOTES_SHOWN:
        lines.append(f"- ... and {len(flagged) - NOTES_SHOWN} more (see their feedback.md)")
    return lines + [""]


def hidden_failures_md(results: list[StudentResult]) -> str:
    """Instructor only: the full message of every failed hidden test, per student."""
    lines = ["# Failed hidden tests, in full (instructor only)", ""]
    for r in results:
        mine = [t for t in r.tests if t.spec.hidden and t.status == "failed" and t.max_score]
        if not mine:
            continue
        lines += [f"## {r.student}", ""]
        for t in mine:
            detail = (t.detail or t.output).replace("\n", "\n  ")
            lines.append(f"- `{t.spec.nodeid}`: {detail}")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_all(
    out: Path,
    results: list[StudentResult],
    chapters: list[str],
    similar: similarity.Similarity | None = None,
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "grades.csv").write_text(grades_csv(results, chapters))
    (out / "grades_status.csv").write_text(grades_status_csv(results, chapters))
    for r in results:
        name = student_folder(r.student)
        if name != r.student:
            print(
                f"warning: student {r.student!r} shares its name with one of the run's "
                f"files: its outputs are in {name}/",
                file=sys.stderr,
            )
            r.notes.append(f"your outputs are in {name}/ (your id is the name of a grader file)")
        folder = out / name
        folder.mkdir(exist_ok=True)
        (folder / "results.json").write_text(json.dumps(results_json(r), indent=1) + "\n")
        (folder / "feedback.md").write_text(feedback_md(r, chapters))
    (out / "summary.md").write_text(summary_md(results, chapters, similar))
    figures.score_figure(results, chapters, out / "score_distribution.png")
    figures.task_figure(results, out / "task_losses.png")
    (out / INSTRUCTOR).mkdir(exist_ok=True)
    (out / INSTRUCTOR / "hidden_failures.md").write_text(hidden_failures_md(results))
    if similar is not None:
        similarity.write(out / INSTRUCTOR, similar, results, chapters)
