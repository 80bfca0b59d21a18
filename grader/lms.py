"""Grades in the shape an LMS imports: Canvas's gradebook import and Moodle's CSV import.

Written by ``grade`` and ``merge`` (``grader/outputs.py``) into ``OUT/_instructor/``:

- ``canvas.csv`` / ``canvas_tasks.csv``: Canvas's gradebook import. The columns
  ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per
  chapter (per task in ``canvas_tasks.csv``); the second row is ``Points Possible``,
  which gives a new assignment its points. A column named without ``(id)`` becomes a new
  Canvas assignment on import.
- ``moodle.csv`` / ``moodle_tasks.csv``: Moodle's "Import grades: CSV file". One
  identifier column (mapped at import: ``Username`` to *username*, or ``Email address`` to
  *useremail*), then one column per grade item, mapped to grade items at import.

Cells are whole points. A chapter not submitted is 0 (as in ``grades.csv``); a chapter
with tests *not graded* (the grader's failure: no verdict yet) is left blank, so an
import does not record a grade that is not one.

Students are named as their submission folders are. Without a roster, Canvas gets the
name as the ``SIS Login ID`` (and the ``Student`` name) and Moodle as the ``Username``.
A roster maps them: ``python -m grader lms OUT --roster roster.csv`` keeps a copy in
``OUT/_instructor/roster.csv`` (used by every later ``grade`` or ``merge`` of OUT) and
rewrites the files. Its header names ``student`` (the folder name, or the grader's id
from ``_instructor/students.csv``) and any of ``name``, ``canvas_id`` (Canvas's user ID),
``sis_user_id``, ``sis_login_id``, ``section``, ``email``; Moodle's file uses ``Email
address`` when every student has an email.

Every cell passes through ``escape.csv_cell``: a name that starts like a formula
(``=``, ``+``, ``-``, ``@``) is written with a leading ``'``, so a spreadsheet that opens
the file before the upload shows it instead of running it.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from grader import escape
from harness import index

CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "Points Possible"
ROSTER = "roster.csv"
ROSTER_FIELDS = ("student", "name", "canvas_id", "sis_user_id", "sis_login_id", "section", "email")


def read_roster(path: Path) -> dict[str, dict[str, str]]:
    """our student id -> its roster row (empty values dropped)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        fields = [h.strip() for h in reader.fieldnames or []]
        if "student" not in fields:
            raise ValueError(f"{path}: the roster needs a 'student' column (our student ids)")
        unknown = [h for h in fields if h not in ROSTER_FIELDS]
        if unknown:
            raise ValueError(
                f"{path}: unknown roster column(s) {', '.join(unknown)}; "
                f"known: {', '.join(ROSTER_FIELDS)}"
            )
        roster = {}
        for row in reader:
            row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
            if row.get("student"):
                roster[row["student"]] = {k: v for k, v in row.items() if v}
    return roster


def _title(text: str) -> str:
    # Canvas reads a trailing "(123)" as an assignment id: keep parentheses out of names.
    return text.replace("(", "").replace(")", "").strip()


def _columns(results, chapters: list[str], tasks: bool) -> list[tuple[str, list[str], int]]:
    """(column name, the test groups it sums: chapter ids or task ids, points possible)."""
    known = index.chapters()
    columns = []
    for cid in chapters:
        chapter = known.get(cid)
        if not tasks:
            most = max((r.chapter_score(cid)[1] for r in results), default=0)
            if not results and chapter:
                most = chapter.max_points
            title = f"{cid} {chapter.title}" if chapter else cid
            columns.append((_title(title), [cid], most))
            continue
        for task in chapter.tasks if chapter else ():
            most = max((_task_score(r, task.id)[1] for r in results), default=task.points)
            columns.append((_title(f"{task.id} {task.name}"), [task.id], most))
    return columns


def _task_score(result, task_id: str) -> tuple[int, int]:
    mine = [t for t in result.tests if t.spec.task == task_id]
    return sum(t.score for t in mine), sum(t.max_score for t in mine)


def _cell(result, key: str, tasks: bool) -> str:
    """Points as a whole number; blank while some of its tests have no verdict."""
    if tasks:
        mine = [t for t in result.tests if t.spec.task == key and t.max_score]
        if any(t.status == "not_graded" for t in mine):
            return ""
        return str(sum(t.score for t in mine))
    if result.chapter_status(key) == "not graded":
        return ""
    return str(result.chapter_score(key)[0])


def _rows(writer_rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(
        [[escape.csv_cell(cell) for cell in row] for row in writer_rows]
    )
    return buf.getvalue()


def _who(roster: dict, result) -> dict[str, str]:
    """The roster's row for ``result``: by the name as submitted, else by the id."""
    return roster.get(result.shown) or roster.get(result.student) or {}


def canvas_csv(results, chapters: list[str], roster=None, tasks: bool = False) -> str:
    roster = roster or {}
    columns = _columns(results, chapters, tasks)
    rows = [CANVAS_IDENTITY + [name for name, _, _ in columns]]
    rows.append([POINTS_POSSIBLE, "", "", "", ""] + [str(most) for _, _, most in columns])
    for r in results:
        who = _who(roster, r)
        rows.append(
            [
                who.get("name", r.shown),
                who.get("canvas_id", ""),
                who.get("sis_user_id", ""),
                who.get("sis_login_id")
                or ("" if who.get("canvas_id") or who.get("sis_user_id") else r.shown),
                who.get("section", ""),
            ]
            + [_cell(r, keys[0], tasks) for _, keys, _ in columns]
        )
    return _rows(rows)


def moodle_identity(results, roster) -> tuple[str, dict[str, str]]:
    """The identifier column's name and each student's value in it."""
    roster = roster or {}
    if results and all(_who(roster, r).get("email") for r in results):
        return "Email address", {r.student: _who(roster, r)["email"] for r in results}
    return "Username", {r.student: _who(roster, r).get("sis_login_id", r.shown) for r in results}


def moodle_csv(results, chapters: list[str], roster=None, tasks: bool = False) -> str:
    columns = _columns(results, chapters, tasks)
    header, ids = moodle_identity(results, roster)
    rows = [[header] + [name for name, _, _ in columns]]
    for r in results:
        rows.append([ids[r.student]] + [_cell(r, keys[0], tasks) for _, keys, _ in columns])
    return _rows(rows)


def write(out: Path, results, chapters: list[str]) -> list[Path]:
    """Write the four files into ``out/_instructor/`` (with its roster, if it has one)."""
    from grader import report

    folder = Path(out) / report.INSTRUCTOR
    folder.mkdir(parents=True, exist_ok=True)
    roster = read_roster(folder / ROSTER) if (folder / ROSTER).is_file() else None
    if roster:
        missing = [r.shown for r in results if not _who(roster, r)]
        if missing:
            print(
                f"warning: {len(missing)} student(s) are not in {folder / ROSTER} "
                f"(e.g. {escape.terminal(', '.join(missing[:3]))}): their LMS rows use their "
                "folder names",
                file=sys.stderr,
            )
    written = []
    for name, text in (
        ("canvas.csv", canvas_csv(results, chapters, roster)),
        ("canvas_tasks.csv", canvas_csv(results, chapters, roster, tasks=True)),
        ("moodle.csv", moodle_csv(results, chapters, roster)),
        ("moodle_tasks.csv", moodle_csv(results, chapters, roster, tasks=True)),
    ):
        (folder / name).write_text(text, encoding="utf-8")
        written.append(folder / name)
    return written


def main(out: Path, roster: Path | None) -> int:
    """``python -m grader lms OUT [--roster FILE]``: (re)write the LMS files of a graded
    OUT, keeping a copy of the roster for later runs."""
    import shutil

    from grader import journal, report, score

    out = Path(out)
    jr = journal.Journal(out / ".journal")
    run_meta, expected = jr.read_meta("run"), jr.read_meta("expected")
    if run_meta is None or expected is None:
        raise SystemExit(f"{out} holds no grader journal (was it a grader --out folder?)")
    if roster is not None:
        read_roster(roster)  # refuse a malformed roster before keeping it
        (out / report.INSTRUCTOR).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(roster, out / report.INSTRUCTOR / ROSTER)
    specs = [score.TestSpec(**t) for t in expected["tests"]]
    results = [score.score_student(s, specs, jr.get(s) or {}) for s in jr.students()]
    written = write(out, results, run_meta["chapters"])
    print(f"wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0
