"""Shared helpers for the grader's tests: build submissions from ch00's solution and
stub plus small overrides, and read the outputs back."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from harness import index
from harness.target import REPO

SOLUTION = (REPO / "solutions" / "ch00" / "training_loop.py").read_text()
STUB = (REPO / "exercises" / "ch00" / "training_loop.py").read_text()
CH00_MAX = index.chapter("ch00").max_points  # the index is checked against the tests' points


def write_submission(
    root: Path, student: str, module: str | None, extra: dict | None = None
) -> Path:
    """``root/student/ch00/training_loop.py`` = ``module`` (None: no module), plus ``extra`` files."""
    folder = root / student
    (folder / "ch00").mkdir(parents=True, exist_ok=True)
    if module is not None:
        (folder / "ch00" / "training_loop.py").write_text(module)
    for rel, text in (extra or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def with_override(code: str) -> str:
    """The solution with ``code`` appended (it overrides what it redefines)."""
    return f"{SOLUTION}\n\n# ---- override ----\n{code}\n"


def grades(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "grades.csv") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def results(out: Path, student: str) -> dict:
    return json.loads((out / student / "results.json").read_text())


def failed_tests(out: Path, student: str) -> dict[str, str]:
    """test name -> output, for every failed test of ``student``."""
    return {
        t["name"]: t["output"]
        for t in results(out, student)["tests"]
        if t.get("status") == "failed"
    }


def without_times(data):
    if isinstance(data, dict):
        return {k: without_times(v) for k, v in data.items() if k != "execution_time"}
    if isinstance(data, list):
        return [without_times(v) for v in data]
    return data


def output_files(out: Path) -> dict[str, object]:
    """Everything a run writes that must not depend on timing: CSV, per student, summary."""
    found = {
        "grades.csv": (out / "grades.csv").read_text(),
        "summary.md": (out / "summary.md").read_text(),
    }
    for path in sorted(out.glob("*/results.json")):
        found[str(path.relative_to(out))] = without_times(json.loads(path.read_text()))
    for path in sorted(out.glob("*/feedback.md")):
        found[str(path.relative_to(out))] = path.read_text()
    return found


def readable_python_prefix() -> list[str]:
    """A command prefix that runs its command where every user can read the Python
    installation, as the ``uid`` isolation mode needs (a Gradescope image installs it so):
    in a private mount namespace, each folder that keeps other users out (``/root`` here)
    is covered by a traversable tmpfs holding only the paths Python lives under. Empty
    when nothing needs it."""
    import shutil

    from grader import isolation, preflight

    keep: dict[Path, set[str]] = {}
    for host in isolation.host_paths():
        blocked = preflight._blocked_for_others(host)
        if blocked and blocked[0] != host.resolve():
            folder = blocked[0]
            keep.setdefault(folder, set()).add(host.resolve().relative_to(folder).parts[0])
    if not keep:
        return []
    if os.geteuid() != 0 or not shutil.which("unshare"):
        raise RuntimeError(f"cannot make {sorted(map(str, keep))} readable without root")
    steps = []
    for k, (folder, names) in enumerate(sorted(keep.items())):
        saved = f"/tmp/.course-keep-{k}"  # an empty mount point, reused by every run
        steps += [f"mkdir -p {saved}", f"mount --bind {folder} {saved}"]
        steps.append(f"mount -t tmpfs -o mode=0711 tmpfs {folder}")
        for name in sorted(names):
            steps += [f"mkdir {folder}/{name}", f"mount --bind {saved}/{name} {folder}/{name}"]
    script = " && ".join(steps) + ' && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"]
