"""Grades that say how they were made.

Every run records, in its journal (``OUT/.journal/meta/provenance.json``), what its
grades depend on besides the submissions: the course version (``pyproject.toml``'s
version and the git commit when the course is a git checkout), a hash of the chosen
chapters' test files (public and hidden), a hash of the environment lock
(``constraints.txt``), the isolation mode and the limits; also the grading key, the
journal's hash of everything a result is reused under (harness, grader, interpreter,
package versions). ``stamp`` copies it into every ``results.json`` (Gradescope's
``extra_data``), into ``summary.md`` and into ``_instructor/provenance.json``.

Nothing here depends on time or on the output folder, so shards merged write what one
run writes. ``python -m grader verify OUT`` (``grader/verify.py``) uses the two hashes to
decide whether a regrade is expected to give the same grades.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import subprocess
import sys
import tomllib
from dataclasses import asdict
from pathlib import Path

from harness import index
from harness.target import REPO

LOCK = REPO / "constraints.txt"
META = "provenance"


def course_version() -> dict:
    """``{"version": pyproject's version, "commit": HEAD or None}``."""
    try:
        version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        version = None
    commit = None
    try:
        proc = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        lines = proc.stdout.split()
        # Only the course's own checkout counts (not a repository it happens to sit in).
        if proc.returncode == 0 and len(lines) == 2 and Path(lines[0]).resolve() == REPO:
            commit = lines[1]
    except (OSError, subprocess.SubprocessError):
        pass
    return {"version": version, "commit": commit}


def graded_test_files(chapters: list[index.Chapter]) -> list[tuple[str, Path]]:
    """(chapter id/file name, path) of each chosen chapter's public and hidden tests."""
    files = []
    for c in sorted(chapters, key=lambda c: c.id):
        files += [(f"{c.id}/{p.name}", p) for p in (c.public_tests, c.hidden_tests) if p.is_file()]
    return files


def tests_hash(chapters: list[index.Chapter]) -> str:
    """sha256 over the chapters' public and hidden test files (name and content)."""
    h = hashlib.sha256()
    for name, path in graded_test_files(chapters):
        h.update(name.encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def lock_hash() -> str | None:
    try:
        return hashlib.sha256(LOCK.read_bytes()).hexdigest()
    except OSError:
        return None


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def build(chapters: list[index.Chapter], limits, mode: str, key: str) -> dict:
    """The provenance of a run over ``chapters`` with ``limits`` in isolation ``mode``;
    ``key`` is its grading key (``grade.Plan.key``)."""
    return {
        "course": course_version(),
        "chapters": [c.id for c in chapters],
        "tests_sha256": tests_hash(chapters),
        "lock_sha256": lock_hash(),
        "isolation": mode,
        "limits": asdict(limits),
        "python": sys.version.split()[0],
        "torch": _version("torch"),
        "grading_key": key,
    }


def mismatches(recorded: dict, chapters: list[index.Chapter]) -> list[str]:
    """How this checkout differs from ``recorded`` in what decides a grade (the tests
    and the lock); empty when a regrade here is expected to give the same grades."""
    found = []
    now = tests_hash(chapters)
    if recorded.get("tests_sha256") != now:
        found.append(
            f"the tests differ: graded with tests {str(recorded.get('tests_sha256'))[:16]}, "
            f"this checkout has {now[:16]}"
        )
    lock = lock_hash()
    if recorded.get("lock_sha256") != lock:
        found.append(
            f"the environment lock (constraints.txt) differs: graded with "
            f"{str(recorded.get('lock_sha256'))[:16]}, this checkout has {str(lock)[:16]}"
        )
    return found


def summary_md(prov: dict, isolation: str = "") -> str:
    """The summary's section on how the grades were made; ``isolation`` says what the
    recorded isolation mode gives and does not (for the instructor only)."""
    course = prov.get("course") or {}
    commit = course.get("commit")
    limits = prov.get("limits") or {}
    lines = [
        "## How these grades were made",
        "",
        f"- course version {course.get('version')}"
        + (f", commit `{commit}`" if commit else " (not a git checkout)"),
        f"- tests (public and hidden, {', '.join(prov.get('chapters', []))}): "
        f"sha256 `{prov.get('tests_sha256')}`",
        f"- environment lock `constraints.txt`: sha256 `{prov.get('lock_sha256')}`",
        f"- Python {prov.get('python')}, torch {prov.get('torch')}; isolation "
        f"`{prov.get('isolation')}`" + (f" ({isolation})" if isolation else ""),
        "- limits: "
        + ", ".join(f"{k} {v}" for k, v in sorted(limits.items()) if not isinstance(v, dict)),
        f"- grading key `{str(prov.get('grading_key'))[:16]}`",
        "",
        "`python -m grader verify OUT` regrades a sample of these students and checks that "
        "the same tests and lock give the same grades.",
        "",
    ]
    return "\n".join(lines)
