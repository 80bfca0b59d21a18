"""Write the grades into an nbgrader gradebook that ``nbgrader export`` reads.

Mapping (nbgrader takes non-notebook work this way): assignment = chapter, "notebook" =
a test file (a database row only), grade cell = a test with ``max_score`` = its points.
Cells are all defined before any submission (a submission only gets grade rows for the
cells that exist when it is created); every grade is an ``auto_score`` with
``needs_manual_grade`` off. Run ``nbgrader export --to nbgrader_grades.csv`` in the
output folder (``nbgrader export`` alone would overwrite our ``grades.csv``). Never run
``generate_assignment`` on these assignments; formgrader does not list them.

``nbgrader.api`` costs ~6 s to import, so it is imported only here, only when writing:
``grade`` writes the gradebook for ``--layout nbgrader`` or ``--gradebook`` only, and
``python -m grader gradebook OUT`` writes it from the journal afterwards.
Creating a gradebook runs the ``alembic`` command, which must be on PATH: the
interpreter's own bin folder is put first.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import warnings
from concurrent.futures import Future
from pathlib import Path

from grader.score import StudentResult, TestSpec


def _cell(spec: TestSpec) -> tuple[str, str]:
    """(notebook, grade cell) names for a test."""
    notebook = Path(spec.nodeid.split("::")[0]).stem
    return notebook, spec.nodeid.split("::", 1)[1]


_PREPARED: dict[Path, Future] = {}  # gradebook path -> an empty one made beside it


def _alembic_on_path() -> None:
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def _empty(path: Path) -> str:
    """A new, empty gradebook in a temporary file beside ``path``; its name."""
    from nbgrader.api import Gradebook

    fd, tmp = tempfile.mkstemp(prefix=".gradebook-", suffix=".db", dir=path.parent)
    os.close(fd)
    os.unlink(tmp)  # nbgrader must create it (through alembic) itself
    with Gradebook(f"sqlite:///{tmp}"):
        pass
    return tmp


def prepare(path: Path) -> None:
    """Import nbgrader and create an empty gradebook beside ``path`` in the background
    (each costs seconds), for a caller about to wait on grading; ``write`` fills it."""
    path = Path(path).resolve()
    if path in _PREPARED:
        return
    _alembic_on_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    made: Future = Future()
    _PREPARED[path] = made

    def make() -> None:
        try:
            made.set_result(_empty(path))
        except BaseException as exc:  # noqa: BLE001 - write() makes its own then
            made.set_exception(exc)

    threading.Thread(target=make, name="prepare-gradebook", daemon=True).start()


def write(path: Path, results: list[StudentResult], specs: list[TestSpec]) -> None:
    _alembic_on_path()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings
        _write(path, results, specs)


def _write(path: Path, results: list[StudentResult], specs: list[TestSpec]) -> None:
    from nbgrader.api import Gradebook

    # Cells come from the course's own test list (never from one student's results); CUDA
    # tests count 0 points on every machine, so they get no cell.
    graded = {s.nodeid for s in specs if not s.cuda}
    path = Path(path)
    made = _PREPARED.pop(path.resolve(), None)
    try:
        tmp = made.result() if made else _empty(path)
    except Exception:  # noqa: BLE001 - the background one failed: make it here
        tmp = _empty(path)
    try:
        with Gradebook(f"sqlite:///{tmp}") as gb:
            chapters = list(dict.fromkeys(s.chapter for s in specs))
            for chapter in chapters:
                gb.update_or_create_assignment(chapter)
            for spec in specs:
                if spec.nodeid not in graded:
                    continue
                notebook, cell = _cell(spec)
                gb.update_or_create_notebook(notebook, spec.chapter)
                gb.update_or_create_grade_cell(
                    cell, notebook, spec.chapter, max_score=spec.points, cell_type="code"
                )
            for r in results:
                # the id is the grader's; a name it was derived from is kept beside it
                named = {"last_name": r.shown} if r.shown != r.student else {}
                gb.update_or_create_student(r.student, **named)
            for r in results:
                # A chapter the student did not submit gets no submission row (nbgrader
                # then reports it as not submitted, with no score).
                present = [c for c in chapters if r.chapter_status(c) != "not submitted"]
                for chapter in present:
                    gb.update_or_create_submission(chapter, r.student)
                for t in r.tests:
                    if t.spec.nodeid not in graded or t.spec.chapter not in present:
                        continue
                    notebook, cell = _cell(t.spec)
                    grade = gb.find_grade(cell, notebook, t.spec.chapter, r.student)
                    grade.auto_score = float(t.score)
                    # not graded (the grader's failure): nbgrader's own "needs grading"
                    grade.needs_manual_grade = t.status == "not_graded"
                gb.db.commit()
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def main(out: Path) -> int:
    """``python -m grader gradebook OUT``: write ``OUT/gradebook.db`` from OUT's journal
    (the same grades as ``grades.csv``), for a run that did not write it."""
    from grader import journal, outputs

    out = Path(out)
    jr = journal.Journal(out / ".journal")
    expected = jr.read_meta("expected")
    if jr.read_meta("run") is None or expected is None:
        raise SystemExit(f"{out} holds no grader journal (was it a grader --out folder?)")
    specs = [TestSpec(**t) for t in expected["tests"]]
    results = outputs.score_entries(specs, {s: jr.get(s) or {} for s in jr.students()})
    write(out / "gradebook.db", results, specs)
    print(f"wrote {out / 'gradebook.db'} ({len(results)} students)", file=sys.stderr)
    return 0
