"""The LMS files, read back with Python's csv module under each LMS's import rules:
Canvas's gradebook import (the columns Student, ID, SIS User ID, SIS Login ID, Section,
then one column per assignment, and a second row "Points Possible") and Moodle's CSV
grade import (one identifier column mapped at import, one column per grade item,
nothing else). Built from scored results without grading anything, then through
``merge`` (as ``grade`` writes them) and ``python -m grader lms --roster``."""

from __future__ import annotations

import csv
import io
import json

import pytest

from grader import journal, lms, merge, score
from harness import index

CHAPTERS = ["ch00", "ch02"]


def _specs() -> list[score.TestSpec]:
    """One public and one hidden test per task, the task's points split between them."""
    specs = []
    for cid in CHAPTERS:
        chapter = index.chapter(cid)
        for task in chapter.tasks:
            half = task.points // 2
            for hidden, points in ((False, task.points - half), (True, half)):
                kind = "hidden" if hidden else "public"
                specs.append(
                    score.TestSpec(
                        nodeid=f"{cid}/test_{kind}.py::test_{task.id.replace('.', '_')}",
                        chapter=cid,
                        name=f"test_{task.id}",
                        task=task.id,
                        points=points,
                        cuda=False,
                        hidden=hidden,
                    )
                )
    return specs


SPECS = _specs()


def _entry(outcome_of) -> dict:
    return {"records": {s.nodeid: {"outcome": outcome_of(s)} for s in SPECS}, "notes": []}


ENTRIES = {
    "alice": _entry(lambda s: "passed"),
    # bob: public tests pass, hidden tests fail
    "bob": _entry(lambda s: "failed" if s.hidden else "passed"),
    # carol: did not submit ch02
    "carol": _entry(lambda s: "not_submitted" if s.chapter == "ch02" else "passed"),
    # dave: one ch00 test has no verdict yet (the grader's failure)
    "dave": _entry(lambda s: "not_graded" if s is SPECS[0] else "passed"),
}
RESULTS = [score.score_student(s, SPECS, ENTRIES[s]) for s in sorted(ENTRIES)]


def read_canvas(text: str) -> tuple[list[str], dict[str, int], dict[str, dict[str, str]]]:
    """(assignment columns, points possible, rows by Student) — refusing what Canvas's
    gradebook import would refuse or misread."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header = rows[0]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"], header
    assignments = header[5:]
    assert assignments and all(a.strip() for a in assignments)
    assert len(set(assignments)) == len(assignments)
    for a in assignments:  # no accidental "(id)" suffix
        assert not a.rstrip().endswith(")"), a
    assert rows[1][0] == "Points Possible" and rows[1][1:5] == ["", "", "", ""]
    possible = {}
    for a, cell in zip(assignments, rows[1][5:]):
        possible[a] = int(cell)
        assert possible[a] >= 0
    students = {}
    for row in rows[2:]:
        assert len(row) == len(header), row  # no extra or missing columns
        assert row[0] and any(row[1:4]), row  # a name and some identifier
        cells = dict(zip(assignments, row[5:]))
        for a, cell in cells.items():
            if cell != "":
                assert 0 <= int(cell) <= possible[a], (a, cell)
        students[row[0]] = dict(zip(header, row))
    return assignments, possible, students


def read_moodle(text: str) -> tuple[str, list[str], dict[str, dict[str, str]]]:
    """(identifier column, grade item columns, rows by identifier) — under Moodle's CSV
    import: a header, then one row per user, numeric grades only."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header = rows[0]
    assert header[0] in ("Username", "Email address", "ID number"), header
    items = header[1:]
    assert items and len(set(items)) == len(items)
    users = {}
    for row in rows[1:]:
        assert len(row) == len(header), row
        assert row[0] and row[0] not in users and row[0] != "Points Possible"
        for cell in row[1:]:
            if cell != "":
                float(cell)
        users[row[0]] = dict(zip(header, row))
    return header[0], items, users


def test_canvas_has_its_identity_columns_points_possible_and_one_column_per_chapter():
    assignments, possible, rows = read_canvas(lms.canvas_csv(RESULTS, CHAPTERS))
    assert [a.split()[0] for a in assignments] == CHAPTERS
    assert list(possible.values()) == [index.chapter(c).max_points for c in CHAPTERS]
    assert set(rows) == set(ENTRIES)
    for r in RESULTS:
        row = rows[r.student]
        assert row["SIS Login ID"] == r.student  # our id, without a roster
        for a, cid in zip(assignments, CHAPTERS):
            want = "" if r.chapter_status(cid) == "not graded" else str(r.chapter_score(cid)[0])
            assert row[a] == want, (r.student, cid)
    assert rows["bob"][assignments[0]] != rows["alice"][assignments[0]]
    assert rows["carol"][assignments[1]] == "0"  # not submitted: 0, as in grades.csv
    assert rows["dave"][assignments[0]] == ""  # no verdict: no grade recorded


def test_canvas_per_task_columns_sum_to_the_chapters():
    assignments, possible, rows = read_canvas(lms.canvas_csv(RESULTS, CHAPTERS, tasks=True))
    tasks = [t for c in CHAPTERS for t in index.chapter(c).tasks]
    assert [a.split()[0] for a in assignments] == [t.id for t in tasks]
    assert [possible[a] for a in assignments] == [t.points for t in tasks]
    for r in RESULTS:
        for cid in CHAPTERS:
            cells = [rows[r.student][a] for a in assignments if a.startswith(cid + ".")]
            if r.chapter_status(cid) == "graded":
                assert sum(int(c) for c in cells) == r.chapter_score(cid)[0]


def test_moodle_has_one_identifier_column_and_one_per_grade_item():
    ident, items, users = read_moodle(lms.moodle_csv(RESULTS, CHAPTERS))
    assert ident == "Username" and set(users) == set(ENTRIES)
    assert [i.split()[0] for i in items] == CHAPTERS
    for r in RESULTS:
        for item, cid in zip(items, CHAPTERS):
            want = "" if r.chapter_status(cid) == "not graded" else str(r.chapter_score(cid)[0])
            assert users[r.student][item] == want
    ident, items, users = read_moodle(lms.moodle_csv(RESULTS, CHAPTERS, tasks=True))
    assert len(items) == sum(len(index.chapter(c).tasks) for c in CHAPTERS)


ROSTER = (
    "student,name,canvas_id,sis_user_id,sis_login_id,section,email\n"
    'alice,"Liddell, Alice",101,S1,aliddell,Sec A,alice@example.edu\n'
    "bob,Bob Ross,102,S2,,Sec B,bob@example.edu\n"
    "carol,Carol,,,,,carol@example.edu\n"
    "dave,Dave,104,,,,dave@example.edu\n"
)


def test_a_roster_maps_our_ids_to_the_lms_ids(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER)
    roster = lms.read_roster(path)
    _, _, rows = read_canvas(lms.canvas_csv(RESULTS, CHAPTERS, roster))
    alice = rows["Liddell, Alice"]
    assert (alice["ID"], alice["SIS User ID"], alice["SIS Login ID"], alice["Section"]) == (
        "101",
        "S1",
        "aliddell",
        "Sec A",
    )
    assert rows["Bob Ross"]["SIS Login ID"] == ""  # matched by its Canvas ID
    assert rows["Carol"]["SIS Login ID"] == "carol"  # no LMS id given: ours
    ident, _, users = read_moodle(lms.moodle_csv(RESULTS, CHAPTERS, roster))
    assert ident == "Email address" and "alice@example.edu" in users
    path.write_text(ROSTER.replace("dave@example.edu", ""))
    ident, _, users = read_moodle(lms.moodle_csv(RESULTS, CHAPTERS, lms.read_roster(path)))
    assert ident == "Username" and set(users) == {"aliddell", "bob", "carol", "dave"}


@pytest.mark.parametrize("header", ["name,email", "student,nickname"])
def test_a_roster_with_unknown_columns_or_no_student_column_is_refused(tmp_path, header):
    path = tmp_path / "roster.csv"
    path.write_text(header + "\nx,y\n")
    with pytest.raises(ValueError):
        lms.read_roster(path)


def _journal(folder) -> None:
    jr = journal.Journal(folder / ".journal")
    jr.write_meta("run", {"chapters": CHAPTERS})
    jr.write_meta("expected", {"key": "k", "tests": [s.to_dict() for s in SPECS]})
    for student, entry in ENTRIES.items():
        jr.put(student, entry)


def test_merge_writes_the_lms_files_and_lms_roster_rewrites_them(tmp_path):
    part = tmp_path / "part"
    _journal(part)
    out = tmp_path / "out"
    assert merge.main([part], out, gradebook=False) == 0
    folder = out / "_instructor"
    _, _, rows = read_canvas((folder / "canvas.csv").read_text())
    assert set(rows) == set(ENTRIES)
    read_canvas((folder / "canvas_tasks.csv").read_text())
    _, _, users = read_moodle((folder / "moodle.csv").read_text())
    assert set(users) == set(ENTRIES)
    read_moodle((folder / "moodle_tasks.csv").read_text())
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    assert lms.main(out, roster) == 0
    ident, _, users = read_moodle((folder / "moodle.csv").read_text())
    assert ident == "Email address"
    # the kept roster is used by the next merge (or grade) of the same folder
    assert merge.main([part], out, gradebook=False) == 0
    assert "Liddell, Alice" in read_canvas((folder / "canvas.csv").read_text())[2]
    assert json.loads((out / "alice" / "results.json").read_text())["score"] == RESULTS[0].total
