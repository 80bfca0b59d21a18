"""Every output of a grading run, written in one place.

``grade``, ``merge`` and ``lms`` call ``write`` with the journal's entries (the one
source of every output): it scores them (``grader/score.py``) and writes what
``grader/report.py``, ``figures``, ``similarity``, ``lms``, ``regrade``, ``provenance``
and, when asked, ``gradebook`` render, each file once, in one pass (nothing is read
back and rewritten). It returns the scored results and the paths it wrote, which the
run lists at its end. Data flows one way: collect → run → score → outputs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader import escape, figures, journal, lms, provenance, regrade, report, score, similarity
from harness import index

INSTRUCTOR = report.INSTRUCTOR


@dataclass
class Written:
    """What one ``write`` produced: the scored results and every path written."""

    results: list[score.StudentResult]
    paths: list[Path] = field(default_factory=list)

    def listing(self, out: Path) -> list[str]:
        """The paths, relative to ``out``, one line per folder; the students' own
        folders counted rather than listed."""
        out = Path(out)
        rel = [p.relative_to(out) if p.is_relative_to(out) else p for p in self.paths]
        folders = {report.student_folder(r.student) for r in self.results}
        per_student = sorted({p.name for p in rel if len(p.parts) > 1 and p.parts[0] in folders})
        top = [str(p) for p in rel if len(p.parts) == 1]
        lines = [f"{out}/: {', '.join(top)}"] if top else []
        others: dict[str, list[str]] = {}
        for p in rel:
            if len(p.parts) > 1 and p.parts[0] not in folders:
                others.setdefault(str(p.parent), []).append(p.name)
        lines += [f"{out}/{d}/: {', '.join(names)}" for d, names in sorted(others.items())]
        if per_student:
            lines.append(
                f"{out}/<student>/: {', '.join(per_student)} for each of "
                f"{len(self.results)} students (_instructor/students.csv maps names to folders)"
            )
        return lines


def prepare(out: Path, gradebook: bool = False) -> None:
    """Start what writing the outputs will need, in the background (the figures'
    matplotlib; an empty nbgrader gradebook, when asked), for a caller about to wait on
    grading."""
    figures.preload()
    if gradebook:
        from grader import gradebook as gb

        gb.prepare(Path(out) / "gradebook.db")


def isolation_text(mode: str | None) -> str:
    """What the isolation ``mode`` gives and does not: the instructor's to read (the
    students see ``report.STUDENT_ISOLATION``)."""
    from grader import isolation

    return isolation.DESCRIPTION.get(mode or "", "")


def score_entries(
    specs: list[score.TestSpec], entries: dict[str, dict]
) -> list[score.StudentResult]:
    """The scored results of journal entries, sorted by student id."""
    return [score.score_student(s, specs, entries[s]) for s in sorted(entries)]


def _text(path: Path, text: str, written: list[Path]) -> None:
    path.write_text(text, encoding="utf-8")
    written.append(path)


def write_reports(
    out: Path,
    results: list[score.StudentResult],
    chapters: list[str],
    similar: similarity.Similarity | None = None,
    prov: dict | None = None,
) -> list[Path]:
    """The CSVs, each student's ``results.json`` and ``feedback.md``, the summary with its
    figures and the instructor's files; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    (out / INSTRUCTOR).mkdir(exist_ok=True)
    written: list[Path] = []
    _text(out / "grades.csv", report.grades_csv(results, chapters), written)
    _text(out / "grades_status.csv", report.grades_status_csv(results, chapters), written)
    for r in results:
        name = report.student_folder(r.student)
        if name != r.student:
            print(
                f"warning: student {escape.terminal(r.shown)!r} shares its name with one of "
                f"the run's files: its outputs are in {name}/",
                file=sys.stderr,
            )
            r.notes.append(f"your outputs are in {name}/ (your id is the name of a grader file)")
        folder = out / name
        folder.mkdir(exist_ok=True)
        data = report.results_json(r, prov)
        _text(folder / "results.json", json.dumps(data, indent=1) + "\n", written)
        _text(folder / "feedback.md", report.feedback_md(r, chapters), written)
    made = provenance.summary_md(prov, isolation_text(prov.get("isolation"))) if prov else ""
    _text(out / "summary.md", report.summary_md(results, chapters, similar, made), written)
    figures.score_figure(results, chapters, out / "score_distribution.png")
    figures.task_figure(results, out / "task_losses.png")
    written += [out / "score_distribution.png", out / "task_losses.png"]
    _text(out / INSTRUCTOR / "hidden_failures.md", report.hidden_failures_md(results), written)
    _text(out / INSTRUCTOR / "students.csv", report.students_csv(results), written)
    if similar is not None:
        similarity.write(out / INSTRUCTOR, similar, results, chapters)
        written += [out / INSTRUCTOR / "similarity.md", out / INSTRUCTOR / "similarity.csv"]
    if prov:
        text = json.dumps(prov, indent=1, sort_keys=True) + "\n"
        _text(out / INSTRUCTOR / "provenance.json", text, written)
    return written


def write(
    out: Path,
    chapters: list[index.Chapter],
    specs: list[score.TestSpec],
    entries: dict[str, dict],
    prov: dict | None = None,
    before: regrade.Before | None = None,
    key: str = "",
    gradebook: bool = False,
) -> Written:
    """Score ``entries`` and write every output of the run into ``out``: the reports,
    the LMS files, ``regrade.md`` (given the journal as the last run left it, ``before``,
    and this run's tests ``key``) and, when asked, the nbgrader gradebook."""
    out = Path(out)
    results = score_entries(specs, entries)
    chapter_ids = [c.id for c in chapters]
    similar = similarity.find(
        similarity.sources_of(entries), chapters, out / ".journal", journal.user_cache()
    )
    paths = write_reports(out, results, chapter_ids, similar, prov)
    paths += lms.write(out, results, chapter_ids)
    if before is not None:
        changes = regrade.diff(before, key, specs, entries, results)
        paths += regrade.write(out / INSTRUCTOR, changes)
    if gradebook:
        from grader import gradebook as gb  # nbgrader costs seconds to import: only here

        gb.write(out / "gradebook.db", results, specs)
        paths.append(out / "gradebook.db")
    return Written(results, paths)
