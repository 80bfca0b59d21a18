"""The course as a Gradescope autograder: one zip to upload, and its grading step.

    python -m grader gradescope OUT [--chapters ch02,ch07]   # writes OUT/autograder.zip
    python -m grader gradescope-run                           # inside Gradescope (run_autograder)

The zip holds ``setup.sh`` and ``run_autograder`` at its root (Gradescope's layout:
https://gradescope-autograders.readthedocs.io/en/latest/specs/) and the course's grading
files for the chosen chapters: the harness, the grader, the index, the data, the public
and hidden tests and the reference solutions (some hidden tests compare with them).
``setup.sh`` installs Python and the same pins as CI on Gradescope's Ubuntu image;
``run_autograder`` makes the course files unreadable to other users (submissions run as
an unprivileged uid), then grades ``/autograder/submission`` exactly as ``grade`` does
into ``/autograder/results/results.json``. ``AUTOGRADER_ROOT`` moves ``/autograder``
(for tests); ``COURSE_PYTHON`` names the interpreter ``setup.sh`` installed.

A student uploads either the ``chNN/<module>.py`` tree or the bare module files
(``autograd.py``, ``gpt.py``, ...): module names are unique across chapters.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

from grader import collect, grade, isolation, release, report
from harness import index
from harness.target import REPO

CONFIG = "gradescope.json"
CONFIG_CHAPTERS = "chapters.txt"  # the same list, for setup.sh
VENV = "/usr/local/course-venv"
# Runtime packages: pyproject's dependencies plus the grader's Hypothesis (nbgrader, the
# gradebook writer, is not needed on Gradescope).
PACKAGES = ("torch", "numpy", "matplotlib", "pytest", "pytest-timeout", "hypothesis")

SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image. Choose the
# base image "Ubuntu 24.04" (python3 is 3.12 there); on an older image Python 3.11 comes
# from the deadsnakes archive.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -y
apt-get install -y --no-install-recommends python3 python3-venv python3-pip ca-certificates util-linux
PY=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    apt-get install -y --no-install-recommends software-properties-common
    add-apt-repository -y ppa:deadsnakes/ppa
    apt-get update -y
    apt-get install -y --no-install-recommends python3.11 python3.11-venv
    PY=python3.11
fi
"$PY" -m venv {VENV}
{VENV}/bin/python -m pip install --upgrade pip
# CI's lock (constraints.txt pins every package, the CPU build of torch included), from
# PyTorch's CPU index.
{VENV}/bin/python -m pip install \\
    --index-url https://download.pytorch.org/whl/cpu \\
    --extra-index-url https://pypi.org/simple \\
    -c /autograder/source/constraints.txt \\
    {" ".join(PACKAGES)}
chmod -R a+rX {VENV}
# Prove the grader in this image once (the reference solutions through the sandbox) and
# cache the proof; a submission's run then repeats it only if its machine differs.
cd /autograder/source
{VENV}/bin/python -E -s -m grader doctor --chapters "$(cat {CONFIG_CHAPTERS})" \\
    || echo "warning: the grader's proof failed while building the image; see above"
"""

RUN_AUTOGRADER = f"""#!/usr/bin/env bash
# Gradescope runs this for every submission, as root, in /autograder.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PY="${{COURSE_PYTHON:-{VENV}/bin/python}}"
# Submissions run as an unprivileged uid: they must not read the tests or the solutions.
chmod 700 "$ROOT/source"
cd "$ROOT/source"
exec "$PY" -E -s -m grader gradescope-run --root "$ROOT"
"""


def bundle_files(chapters: list[index.Chapter]) -> list[Path]:
    """The course files the autograder needs for ``chapters`` (paths inside REPO)."""
    files = [REPO / "constraints.txt", REPO / "pyproject.toml"]
    files += sorted((REPO / "harness").glob("*.py"))
    files += release.grader_modules()
    files += [REPO / "course" / "untouched.toml"]
    for c in chapters:
        files.append(REPO / "course" / f"{c.id}.toml")
        files += [c.public_tests, c.hidden_tests, REPO / "solutions" / c.id / f"{c.module}.py"]
        data = REPO / "course" / "data"
        if data.is_dir():
            files += [p for p in sorted(data.rglob(f"{c.id}_*")) if p.is_file()]
    return [p for p in files if p.is_file() and not p.is_symlink()]


def _add(z: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def build(out: Path, chapters: list[index.Chapter]) -> Path:
    """Write ``out/autograder.zip`` for ``chapters``; return its path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "autograder.zip"
    config = {"chapters": [c.id for c in chapters]}
    with zipfile.ZipFile(path, "w") as z:
        _add(z, "setup.sh", SETUP_SH.encode(), executable=True)
        _add(z, "run_autograder", RUN_AUTOGRADER.encode(), executable=True)
        _add(z, CONFIG, (json.dumps(config, indent=1) + "\n").encode())
        _add(z, CONFIG_CHAPTERS, (",".join(config["chapters"]) + "\n").encode())
        for p in bundle_files(chapters):
            _add(z, p.relative_to(REPO).as_posix(), p.read_bytes())
    return path


# ---- inside Gradescope ---------------------------------------------------------------


def submitted_files(
    folder: Path, chapters: list[index.Chapter]
) -> tuple[dict[str, bytes], list[str]]:
    """``chNN/<module>.py`` -> bytes from an upload holding either that tree (possibly
    under one folder) or the bare module files; notes about what was not taken."""
    by_module = {c.module + ".py": c for c in chapters}
    found: dict[str, tuple[int, Path]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        depth = len(Path(dirpath).relative_to(folder).parts)
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "__")) and depth < 3]
        for name in filenames:
            chapter = by_module.get(name)
            if chapter is None:
                continue
            path = Path(dirpath) / name
            rank = 0 if path.parent.name == chapter.id else 1  # the tree wins over a loose copy
            rel = f"{chapter.id}/{chapter.module}.py"
            if rel not in found or rank < found[rel][0]:
                found[rel] = (rank, path)
    files, notes = {}, []
    for rel, (_, path) in sorted(found.items()):
        try:
            files[rel] = collect.read_regular(path)
        except (OSError, ValueError) as exc:
            notes.append(f"{rel}: not read ({exc})")
    return files, notes


ATTEMPTS = 2


def run(root: Path) -> int:
    """Grade the one submission under ``root`` into ``root/results/results.json``."""
    config = json.loads((REPO / CONFIG).read_text())
    chapters = grade.choose_chapters(config["chapters"])
    files, notes = submitted_files(root / "submission", chapters)
    if not files:
        expected = ", ".join(f"{c.id}/{c.module}.py (or {c.module}.py)" for c in chapters)
        notes.insert(0, f"your upload holds none of the files this assignment grades: {expected}")
    notes.append(report.STUDENT_ISOLATION)  # the student's one neutral line
    # What the mode gives and lacks is the staff's to read: Gradescope shows this script's
    # output (stdout_visibility "hidden") to them only.
    mode = isolation.mode()
    print(f"isolation: {isolation.DESCRIPTION[mode]}")
    for gap in isolation.gaps(mode):  # this container holds this one submission only
        print(f"  not defended here: {gap}")
    student = "submission"
    sub = collect.Submission(student, root / "submission", files, notes)
    with tempfile.TemporaryDirectory(prefix="gradescope-") as tmp:
        out = Path(tmp) / "out"
        try:
            for _ in range(ATTEMPTS):  # a second run grades only what the first could not
                graded = grade.grade(
                    [sub], out, chapters, jobs=1, gradebook=False, progress_stream=sys.stdout
                )
                if not graded[0].not_graded:
                    break
        except grade.PreflightFailed as exc:
            # No results.json: Gradescope then reports an autograder failure to the staff
            # instead of recording a zero the student did not earn.
            print(f"error: {exc}")
            return 2
        results = out / report.student_folder(student) / "results.json"
        (root / "results").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(results, root / "results" / "results.json")
        print((out / report.student_folder(student) / "feedback.md").read_text())
    return 0


def main_build(out: Path, chapters: list[str] | None) -> int:
    chosen = grade.choose_chapters(chapters)
    path = build(out, chosen)
    print(
        f"wrote {path} for {', '.join(c.id for c in chosen)}: upload it as the assignment's "
        "autograder (base image Ubuntu 24.04)",
        file=sys.stderr,
    )
    return 0
