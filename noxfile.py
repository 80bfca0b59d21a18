"""Developer sessions: `nox -s tests`, `nox -s lint`, `nox -s demo`, `nox -s bench`,
`nox -s mutants [-- chNN ...]`,
`nox -s mutants_changed`, `nox -s lock`, `nox -s install_route`.

Every install goes through constraints.txt, which pins the CPU build of torch this
course is measured on (an unpinned torch pulls a multi-GB CUDA build).
"""

import os
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests", "mutants_changed"]
nox.options.reuse_existing_virtualenvs = True
INSTALL = ("-c", "constraints.txt", "-e", ".[dev]")


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests: every chapter proven against stubs, solutions, bug zoo; the grader.

    Test files run side by side, a whole file per worker (its module fixtures, such as a
    graded class, are built once); tests marked ``serial`` load or measure the whole
    machine, so they run afterwards, alone; tests marked ``slow`` (installs) are left to
    ``nox -s install_route``. Arguments after ``--`` replace all of this."""
    session.install(*INSTALL)
    if session.posargs:
        session.run("python", "-m", "pytest", *session.posargs)
        return
    workers = str(max(2, min(4, os.cpu_count() or 1)))
    session.run(
        "python", "-m", "pytest", "-m", "not serial and not slow", "-n", workers,
        "--dist", "loadfile", "--no-loadscope-reorder", "--durations=25",
    )  # fmt: skip
    session.run("python", "-m", "pytest", "-m", "serial and not slow", success_codes=[0, 5])


@nox.session
def install_route(session: nox.Session) -> None:
    """The student's two install routes (uv, pip) as a normal user with no pip configuration:
    CPU torch on Linux in at most 1.5 GB (tests/test_install_route.py; ~2-5 minutes: two
    installs from PyPI, torch from the local CPU wheel served as PyTorch's CPU index)."""
    session.install(*INSTALL)
    session.run(
        "python", "-m", "pytest", "tests/test_install_route.py", "-m", "slow", "-s",
        *session.posargs,
    )  # fmt: skip


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def bench(session: nox.Session) -> None:
    """Per-chapter test wall time beside the cost of `import torch`."""
    session.install(*INSTALL)
    session.run("python", "tests/bench_chapters.py", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: grade the bundled demo submissions into out/ (pass other args to override)."""
    session.install(*INSTALL)
    session.run("python", "-m", "grader", "grade", *(session.posargs or ["--out", "out"]))


@nox.session
def mutants(session: nox.Session) -> None:
    """Mutation testing of the reference solutions: per chapter, killed / survived / equivalent."""
    session.install(*INSTALL)
    session.run("python", "tests/mutants.py", *session.posargs)


@nox.session(venv_backend="none")
def mutants_changed(session: nox.Session) -> None:
    """The mutants of definitions whose code or tests changed since their chapter's last
    complete run (a fixed sample of at most 40): fails on a survivor that run did not have.

    Runs in the `tests` session's environment (same install; a second copy of torch costs
    CI half a minute), so `tests` runs first: `nox -s tests mutants_changed`."""
    python = Path(".nox", "tests", "bin", "python")
    if not python.exists():
        session.error(f"{python} is missing: `nox -s tests mutants_changed` builds it first")
    session.run(
        str(python), "tests/mutants.py", "--changed", "--budget", "40", *session.posargs,
        external=True,
    )  # fmt: skip


# Releases that need a later Python than the oldest requires-python admits, capped so the
# lock installs there too (tests/test_structure.py checks every pin): soupsieve 3.0.2 and
# later need 3.11.5, and Debian 12's python3 is 3.11.2.
OLDEST_PYTHON_CAPS = ["soupsieve<3"]


@nox.session
def lock(session: nox.Session) -> None:
    """Rewrite constraints.txt: a fresh install of the project (torch pinned to its CPU
    build), frozen. Review the diff before committing it."""
    session.install("torch==2.13.0")
    session.install("-e", ".[dev]", "torch==2.13.0", *OLDEST_PYTHON_CAPS)
    frozen = session.run(
        "python", "-m", "pip", "freeze", "--all", "--exclude-editable", silent=True
    )
    header = [line for line in open("constraints.txt") if line.startswith("#")]
    pins = sorted(
        (
            line.replace("+cpu", "")
            for line in frozen.split()
            if "==" in line and not line.startswith("pip==")
        ),
        key=str.lower,
    )
    with open("constraints.txt", "w") as f:
        f.write("".join(header) + "\n".join(pins) + "\n")
