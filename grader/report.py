"""What the grades say, as text: ``grades.csv`` and ``grades_status.csv``, per student
``results.json`` (Gradescope) and ``feedback.md``, the instructor's ``summary.md`` and
``_instructor/hidden_failures.md`` (the full messages of failed hidden tests). Writing
them is ``grader/outputs.py``'s job; everything here is a pure function of the scored
results, so a merged set of shards renders exactly what one run renders.

One visibility policy everywhere: what a student may see of a hidden test (its
statement and how it failed) is the same in ``results.json`` and ``feedback.md``; the
full message is in the instructor's file only. Every string a student controls (their
name, messages of their code, zip entry names) goes through ``grader/escape.py``'s
function for the format it lands in.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict

from grader import escape, figures, similarity
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
# What a student is told of the isolation their code ran in; the limits of each mode are
# the instructor's business (``isolation.DESCRIPTION``, in summary.md and the run's log).
STUDENT_ISOLATION = "Graded in the course's sandbox."


def student_folder(student: str) -> str:
    """The folder of ``student``'s outputs: their id, unless that is one of the run's files."""
    return f"_student-{student}" if student.lower() in RUN_FILES else student


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with an ellipsis
    when anything was cut (never mid-word)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def _csv(rows: list[list], terminator: str = "\n") -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=terminator).writerows(
        [[escape.csv_cell(cell) for cell in row] for row in rows]
    )
    return buf.getvalue()


def grades_csv(results: list[StudentResult], chapters: list[str]) -> str:
    rows = [["student", *chapters, "total", "max"]]
    rows += [
        [r.shown, *(r.chapter_score(c)[0] for c in chapters), r.total, r.max_total] for r in results
    ]
    return _csv(rows)


def grades_status_csv(results: list[StudentResult], chapters: list[str]) -> str:
    """``grades.csv``'s companion: per student and chapter, whether its points are a
    grade (``graded``), a chapter the student did not submit (``not submitted``: 0 points)
    or not a verdict yet (``not graded``: the grader's failure; grading again runs it)."""
    rows = [["student", *chapters, "tests_not_graded"]]
    rows += [
        [r.shown, *(r.chapter_status(c) for c in chapters), len(r.not_graded)] for r in results
    ]
    return _csv(rows)


def students_csv(results: list[StudentResult]) -> str:
    """Instructor only: each student's name as submitted, the id the grader derived
    from it (journal key) and the folder of their ``results.json`` and ``feedback.md``."""
    rows = [["student", "id", "folder"]]
    rows += [[r.shown, r.student, student_folder(r.student)] for r in results]
    return _csv(rows)


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


def results_json(result: StudentResult, provenance: dict | None = None) -> dict:
    """Gradescope's results.json: https://gradescope-autograders.readthedocs.io/en/latest/specs/
    A CUDA test that could not run on this machine is left out of ``tests`` (Gradescope
    would show it as a failure) and counted in ``output``. Every text is shown as plain
    text (``*_format``), so HTML or Markdown a student's code produced is never rendered."""
    tests, numbers = [], defaultdict(int)
    chapter_ids = list(index.chapters())
    for t in result.tests:
        numbers[t.spec.chapter] += 1
        if t.status == "not_here":
            continue
        chapter_no = chapter_ids.index(t.spec.chapter) if t.spec.chapter in chapter_ids else 0
        entry = {
            "name": escape.json_text(
                f"{t.spec.chapter} {'hidden' if t.spec.hidden else 'public'}: {t.spec.name}"
            ),
            "number": f"{chapter_no}.{numbers[t.spec.chapter]}",
            "score": t.score,
            "max_score": t.max_score,
            "status": _status(t),
            "output": escape.json_text(t.output),
            "visibility": VISIBILITY[t.spec.hidden],
        }
        if t.spec.task:
            entry["tags"] = [t.spec.task]
        tests.append(entry)
    data = {
        "score": result.total,
        "execution_time": round(result.execution_time),
        "output": escape.json_text("\n".join(results_notes(result))),
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    if provenance:
        data["extra_data"] = {"provenance": provenance}
    return data


SAME_REASON_GROUP = 3  # this many tests failing with one message are reported as one line
INLINE = 200  # a one-line message up to this long stays in its list item; longer: a block


def _why(text: str) -> list[str]:
    """A failure message under a list item: inline when short and on one line, else a
    code block (shown verbatim, nothing in it rendered)."""
    text = escape.plain(text).strip()
    if "\n" not in text and len(text) <= INLINE:
        return [escape.md_text(text)]
    block = escape.md_block(text).splitlines()
    return ["", *(f"  {line}" for line in block)]


def _item(head: str, why: str) -> list[str]:
    first, *rest = _why(why)
    return [f"{head}: {first}" if first else f"{head}:", *rest]


def feedback_md(result: StudentResult, chapters: list[str]) -> str:
    lines = [f"# Feedback for {escape.md_text(result.shown)}", ""]
    lines.append(f"Total: **{result.total} / {result.max_total}** points.")
    lines.append("")
    notes = [n for n in results_notes(result) if "CUDA" not in n]
    if notes:
        lines += ["About your submission:", ""] + [f"- {escape.md_text(n)}" for n in notes] + [""]
    for chapter in chapters:
        got, most = result.chapter_score(chapter)
        mine = [t for t in result.tests if t.spec.chapter == chapter]
        title = index.chapters()[chapter].title if chapter in index.chapters() else chapter
        status = result.chapter_status(chapter)
        lines += [f"## {chapter} — {title}: {got} / {most}", ""]
        if status == "not submitted":
            module = mine[0].output.split("no ", 1)[-1] if mine else "its module"
            lines += [f"Not submitted: your submission has no {escape.md_text(module)}", ""]
            continue
        not_graded = [t for t in mine if t.status == "not_graded"]
        if not_graded:
            lines.append(f"Not graded yet ({len(not_graded)}), the grader's problem, not yours:")
            reasons = dict.fromkeys(t.output for t in not_graded)
            lines += [f"- {escape.md_text(why)}" for why in list(reasons)[:3]]
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
                if len(group) >= SAME_REASON_GROUP:
                    pts = sum(t.spec.points for t in group)
                    lines += _item(f"- {len(group)} tests (0 / {pts} pt) failed the same way", why)
                    lines.append(f"  ({', '.join(_label(t) for t in group)})")
                else:
                    for t in group:
                        lines += _item(f"- {_label(t)} (0 / {t.spec.points} pt)", why)
            lines.append("")
            hints = [h for h in dict.fromkeys(_hint(t.spec.task) for t in failed) if h]
            if hints:
                lines += ["Where to look:", ""] + [f"- {h}" for h in hints] + [""]
        if other:
            lines.append(f"CUDA tests, not counted ({len(other)}):")
            lines += [f"- {_label(t)}: {escape.md_text(t.output.splitlines()[0])}" for t in other]
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
FLAGS_SHOWN = 40
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
    provenance: str = "",
) -> str:
    """A page that stays short at 500 students: per chapter, per task, the few failure
    clusters that matter, the submissions that need a look, and (given) how the grades
    were made."""
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
    lines += tasks_table(results)
    lines += ["![points lost per task, and why](task_losses.png)", ""]
    lines += _flags(results)
    if similar is not None:
        lines += similarity.summary_lines(similar, results)
    lines += _clusters(results)
    lines += _needs_a_look(results)
    text = "\n".join(lines) + "\n"
    return text + ("\n" + provenance if provenance else "")


def tasks_table(results: list[StudentResult]) -> list[str]:
    """Per task, the class's points lost and how many students are in each state
    (``figures.task_table``, which ``task_losses.png`` draws too)."""
    table = figures.task_table(results)
    lines = [
        "## Where the class loses points (by task)",
        "",
        "Students per state of the task, in the words of their own test summary: *not "
        'started* (only the stub\'s "not implemented"), *blocked* (a task it relies on '
        "fails or is not written), *not run* (the module does not import), *not submitted* "
        "(no module), *not graded* (no verdict yet: the grader's failure).",
        "",
        "| task | name | points | lost (class) | " + " | ".join(figures.STATES) + " |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in figures.STATES) + " |",
    ]
    for task in sorted(table, key=lambda t: (-table[t]["lost"], list(table).index(t))):
        row = table[task]
        try:
            name = index.task(task).name
        except KeyError:
            name = "?"
        most = row["points"] // max(1, sum(row[s] for s in figures.STATES))
        counts = " | ".join(str(row[s]) for s in figures.STATES)
        lines.append(f"| {task} | {name} | {most} | {row['lost']} | {counts} |")
    return lines + [""]


def flag_lines(result: StudentResult) -> list[str]:
    """What a submission tried or held that took no part in grading, one finding a line:
    files that would have changed how tests run, refused files and zip entries,
    grader-shaped results, tests failed as tampering."""
    found = list(result.flags)
    tampered = [t for t in result.tests if t.category == "tampering" and t.status == "failed"]
    if tampered:
        where = ", ".join(sorted({t.spec.chapter for t in tampered}))
        found.append(f"{len(tampered)} test(s) failed as tampering ({where}; see feedback.md)")
    return found


def _flags(results: list[StudentResult]) -> list[str]:
    found = [(r, f) for r in results for f in flag_lines(r)]
    if not found:
        return []
    lines = [
        "## Tampering attempts and refused files",
        "",
        "None of these took part in grading; each is a reason to read the submission.",
        "",
    ]
    for r, flag in found[:FLAGS_SHOWN]:
        lines.append(f"- {escape.md_text(r.shown)}: {escape.md_text(clip(flag, 300))}")
    if len(found) > FLAGS_SHOWN:
        lines.append(f"- ... and {len(found) - FLAGS_SHOWN} more (see their feedback.md)")
    return lines + [""]


def _names(names: list[str], shown: int = 8) -> str:
    text = ", ".join(escape.md_text(n) for n in names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _clusters(results: list[StudentResult]) -> list[str]:
    """Identical failures shared by several students, biggest first, without the
    not-started noise; the rest is counted, not listed."""
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in results:
        for t in r.tests:
            if t.status == "failed" and t.max_score and not t.output.startswith(NOISE):
                first = t.output.splitlines()[0] if t.output else ""
                groups[(t.spec.task or "?", first)].add(r.shown)
    shared = sorted(
        ((k, v) for k, v in groups.items() if len(v) > 1), key=lambda kv: (-len(kv[1]), kv[0])
    )
    lines = ["## Failures shared by several students", ""]
    if not shared:
        return lines + ["No failure message is shared by two or more students.", ""]
    for (task, first), students in shared[:CLUSTERS_SHOWN]:
        lines.append(f"- **{len(students)} students**, {task}: {escape.md_text(clip(first, 300))}")
        lines.append(f"  ({_names(sorted(students))})")
    if len(shared) > CLUSTERS_SHOWN:
        lines.append(f"- ... and {len(shared) - CLUSTERS_SHOWN} smaller clusters")
    return lines + [""]


def _needs_a_look(results: list[StudentResult]) -> list[str]:
    # What the previous section listed (refused files) is not listed twice.
    own = {id(r): [n for n in r.notes if n not in r.flags] for r in results}
    flagged = [r for r in results if own[id(r)] or r.not_graded]
    if not flagged:
        return []
    lines = ["## Submissions with notes (restarts, moved folders, not graded)", ""]
    for r in flagged[:NOTES_SHOWN]:
        notes = [n for n in results_notes(r) if n not in r.flags][
            : len(own[id(r)]) + bool(r.not_graded)
        ]
        more = f" (and {len(notes) - 3} more notes)" if len(notes) > 3 else ""
        text = "; ".join(clip(n, 200) for n in notes[:3]) + more
        lines.append(f"- {escape.md_text(r.shown)}: {escape.md_text(text)}")
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
        lines += [f"## {escape.md_text(r.shown)}", ""]
        for t in mine:
            lines += _item(f"- `{t.spec.nodeid}`", t.detail or t.output)
        lines.append("")
    return "\n".join(lines) + "\n"
