"""What a chapter's lab notebook uses (``course/labs/chNN.py``).

    from harness import lab
    ag = lab.module("ch02")                 # the student's module, live (COURSE_IMPL picks another)
    result = lab.attempt(ag.two_stage_train, 400, 0.02)   # None, with a TODO line, if not done
    lab.check("w2 after 400 steps", f"{result.w2:.4f}")   # a number the reading quotes
    lab.run_tests("ch02")                   # the chapter's public tests, as the student runs them

A lab runs to its end on an untouched stub: every call into the student's code goes
through ``attempt``, which prints what is missing instead of stopping the notebook.
``check`` prints ``check <what>: <text>``; the project's tests make sure every such text
appears in the chapter's reading, so a reading's numbers stay those the code produces.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness import target

FIGURES_ENV = "COURSE_LAB_FIGURES"
# "name": run_tests only names the run it would make. The project's lab tests set it: what
# that run shows is proven per chapter by tests/test_chapters.py, and a pytest process per
# lab and per target was a fifth of their time.
TESTS_ENV = "COURSE_LAB_TESTS"


def module(chapter: str):
    """The chapter's module under test, itself (not through the tests' plain-data calls)."""
    from harness import index

    impl = os.environ.get(target.ROOT_ENV) or "exercises"
    target.set_root(impl)
    return target.load(chapter, index.chapter(chapter).module)


def attempt(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, or None after one line saying what is missing or what went wrong."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a lab shows the error and goes on
        from harness.plugin import is_stub_todo

        if is_stub_todo(exc):
            print(f"TODO: implement {exc} (then run this cell again)")
        else:
            text = str(exc).strip().splitlines()
            print(f"your code raised {type(exc).__name__}: {text[-1] if text else ''}")
    return None


def check(what: str, text: str) -> None:
    """Show a number the reading quotes (the project's tests compare it with the reading)."""
    if ": " in what:
        raise ValueError(f"lab.check({what!r}, ...): the label may not hold ': ' (it ends it)")
    print(f"check {what}: {text}")


def run_tests(chapter: str) -> int:
    """Run the chapter's public tests in a fresh process and show pytest's summary."""
    root = target.REPO
    impl = os.environ.get(target.ROOT_ENV) or "exercises"
    if os.environ.get(TESTS_ENV) == "name":
        print(f"tests not run here: pytest exercises/{chapter} --impl {impl}")
        return 0
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"exercises/{chapter}",
            "--impl",
            impl,
            "-q",
            "--no-header",
            "--color=no",  # a kernel's environment may ask for colour (FORCE_COLOR): no ANSI
        ],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    lines = proc.stdout.strip().splitlines()
    start = next((i for i, ln in enumerate(lines) if "course tasks" in ln), max(0, len(lines) - 25))
    print("\n".join(lines[start:]))
    return proc.returncode


# The labs' own folder at the course's root. It ships with its .gitignore, so it exists in
# every checkout: a folder appearing in the working directory while a student's call runs
# would be blamed on that call (harness.invariants: writes only where told).
OUTPUT = "labs-out"
IGNORE = "# written by the course's labs: never committed\n*\n!.gitignore\n"


def output_folder() -> Path:
    """``labs-out/`` at the course's root (made again, with its ``.gitignore``, if it was
    deleted), so nothing a lab writes is ever offered for a commit."""
    folder = target.REPO / OUTPUT
    folder.mkdir(exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text(IGNORE)
    return folder


def figure_path(name: str) -> Path:
    """Where a lab saves a figure of its own: ``labs-out/``, or the folder
    ``COURSE_LAB_FIGURES`` names (the project's tests use a temporary one). Never the folder
    the lab was started from."""
    chosen = os.environ.get(FIGURES_ENV)
    folder = Path(chosen) if chosen else output_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name
