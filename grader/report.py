"""Write what the grades say: ``grades.csv``, per student ``results.json`` (Gradescope)
and ``feedback.md``, and the instructor's ``summary.md`` with ``score_distribution.png``.

Everything here is a pure function of the scored results, so a merged set of shards
writes exactly what one run writes.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path

from grader.score import StudentResult
from harness import index

VISIBILITY = {False: "visible", True: "after_published"}


def grades_csv(results: list[StudentResult], chapters: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["student", *chapters, "total", "max"])
    for r in results:
        writer.writerow(
            [r.student, *(r.chapter_score(c)[0] for c in chapters), r.total, r.max_total]
        )
    return buf.getvalue()


def results_json(result: StudentResult) -> dict:
    """Gradescope's results.json: https://gradescope-autograders.readthedocs.io/en/latest/specs/"""
    tests, numbers = [], defaultdict(int)
    chapter_ids = list(index.chapters())
    for t in result.tests:
        numbers[t.spec.chapter] += 1
        chapter_no = chapter_ids.index(t.spec.chapter) if t.spec.chapter in chapter_ids else 0
        entry = {
            "name": f"{t.spec.chapter} {'hidden' if t.spec.hidden else 'public'}: {t.spec.name}",
            "number": f"{chapter_no}.{numbers[t.spec.chapter]}",
            "score": t.score,
            "max_score": t.max_score,
            "output": t.output,
            "visibility": VISIBILITY[t.spec.hidden],
        }
        if t.status != "not_graded":
            entry["status"] = t.status
        if t.spec.task:
            entry["tags"] = [t.spec.task]
        tests.append(entry)
    output = "\n".join(result.notes)
    return {
        "score": result.total,
        "execution_time": round(result.execution_time),
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


SAME_REASON_GROUP = 3  # this many tests failing with one message are reported as one line


def feedback_md(result: StudentResult, chapters: list[str]) -> str:
    lines = [f"# Feedback for {result.student}", ""]
    lines.append(f"Total: **{result.total} / {result.max_total}** points.")
    lines.append("")
    if result.notes:
        lines += ["About your submission:", ""] + [f"- {n}" for n in result.notes] + [""]
    for chapter in chapters:
        got, most = result.chapter_score(chapter)
        mine = [t for t in result.tests if t.spec.chapter == chapter]
        title = index.chapters()[chapter].title if chapter in index.chapters() else chapter
        lines += [f"## {chapter} — {title}: {got} / {most}", ""]
        passed = [t for t in mine if t.status == "passed"]
        failed = [t for t in mine if t.status == "failed"]
        skipped = [t for t in mine if t.status == "not_graded"]
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
        if skipped:
            lines.append(
                f"Not graded here ({len(skipped)}): " + ", ".join(_label(t) for t in skipped)
            )
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


def summary_md(results: list[StudentResult], chapters: list[str]) -> str:
    lines = ["# Grading summary", "", f"{len(results)} submissions.", ""]
    lines += ["| chapter | mean | min | max | out of |", "| --- | --- | --- | --- | --- |"]
    for c in chapters:
        scores = [r.chapter_score(c)[0] for r in results]
        most = max((r.chapter_score(c)[1] for r in results), default=0)
        if scores:
            lines.append(
                f"| {c} | {sum(scores) / len(scores):.1f} | {min(scores)} | {max(scores)} | {most} |"
            )
    lines += ["", "![score distribution](score_distribution.png)", ""]
    lines += ["## Pass rate per test", "", "| test | passed | rate |", "| --- | --- | --- |"]
    specs = results[0].tests if results else []
    for k, t in enumerate(specs):
        graded = [r.tests[k] for r in results if r.tests[k].status != "not_graded"]
        passed = sum(x.status == "passed" for x in graded)
        rate = f"{passed / len(graded):.0%}" if graded else "not graded"
        lines.append(f"| `{t.spec.nodeid}` | {passed}/{len(graded)} | {rate} |")
    lines += ["", "## Identical failures across students", ""]
    clusters = defaultdict(list)
    for r in results:
        for t in r.tests:
            if t.status == "failed":
                clusters[(t.spec.nodeid, t.output)].append(r.student)
    shared = sorted(
        ((k, v) for k, v in clusters.items() if len(v) > 1), key=lambda kv: (-len(kv[1]), kv[0])
    )
    if not shared:
        lines.append("No failure message is shared by two or more students.")
    for (nodeid, output), students in shared:
        first = output.splitlines()[0] if output else ""
        lines.append(f"- {len(students)} students — `{nodeid}`: {first}")
        lines.append(f"  - {', '.join(students)}")
    return "\n".join(lines) + "\n"


def score_figure(results: list[StudentResult], chapters: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4, 0.8 * len(chapters) + 2), 3.5))
    data = []
    for c in chapters:
        fractions = []
        for r in results:
            got, most = r.chapter_score(c)
            fractions.append(100.0 * got / most if most else 0.0)
        data.append(fractions or [0.0])
    ax.boxplot(data, showmeans=True)
    for k, fractions in enumerate(data, start=1):
        ax.scatter([k] * len(fractions), fractions, s=10, alpha=0.6)
    ax.set_xticks(range(1, len(chapters) + 1), chapters)
    ax.set_ylabel("score (% of chapter points)")
    ax.set_ylim(-5, 105)
    ax.set_title(f"Score distribution per chapter ({len(results)} submissions)")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def write_all(out: Path, results: list[StudentResult], chapters: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "grades.csv").write_text(grades_csv(results, chapters))
    for r in results:
        folder = out / r.student
        folder.mkdir(exist_ok=True)
        (folder / "results.json").write_text(json.dumps(results_json(r), indent=1) + "\n")
        (folder / "feedback.md").write_text(feedback_md(r, chapters))
    (out / "summary.md").write_text(summary_md(results, chapters))
    score_figure(results, chapters, out / "score_distribution.png")
