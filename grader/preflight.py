"""Prove the grader on this machine before anyone is graded.

Two steps, both about the grader and never about a student:

1. ``environment_problems``: what is known to break grading here, each with its fix —
   a package the hidden tests need, a Python installation the sandbox user cannot read
   (the ``uid`` mode), a temporary folder that cannot be written, a gradebook tool that
   is missing.
2. ``prove``: the reference solutions of the chosen chapters go through the same
   sandbox, limits and test process as a submission and must come out at full marks.

A proof is cached per environment (the tests, the limits, the isolation mode, the
interpreter and the package versions: ``environment``), so it is paid once, and
``grade`` runs it beside its first submissions. ``python -m grader doctor`` runs both
on demand and prints what isolation this machine gives.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import collect, isolation, run
from harness import index
from harness.target import NAMED_TARGETS, REPO

PACKAGES = ("torch", "numpy", "matplotlib", "pytest", "pytest-timeout", "hypothesis")
GRADER_INSTALL = "python -m pip install -c constraints.txt -e '.[grader]'"
INSTRUCTOR_INSTALL = "python -m pip install -c constraints.txt -e '.[instructor]'"
SHOWN = 4  # failing reference tests quoted in a refusal


@dataclass
class Proof:
    ok: bool
    mode: str
    problems: list[str] = field(default_factory=list)  # each names the cause and its fix
    score: tuple[int, int] | None = None  # the reference's points, when it ran
    cached: bool = False

    def refusal(self) -> str:
        lines = [
            "the grader cannot grade on this machine yet (nothing was graded; this is about "
            "the grader, not about any student):"
        ]
        lines += [f"  - {p}" for p in self.problems]
        lines.append(
            f"  (isolation: {isolation.DESCRIPTION[self.mode]}; `python -m grader doctor` rechecks)"
        )
        return "\n".join(lines)


def environment() -> dict:
    """Everything about this machine that can change a grade besides the tests."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "isolation": isolation.mode(),
        "landlock": isolation.landlock_abi() if isolation.mode() != "none" else 0,
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "prefix": sys.prefix,
        "packages": versions,
        "user": getattr(os, "geteuid", lambda: None)(),  # None on Windows
        "repo": str(REPO),
        "tmp": tempfile.gettempdir(),
    }


# ---- what is known to break grading -------------------------------------------------


def _blocked_for_others(path: Path, read: bool = True) -> tuple[Path, str] | None:
    """The first folder from ``/`` down to ``path`` that other users cannot enter (or
    ``path`` itself if ``read`` and they cannot read it), with its permission bits."""
    path = path.resolve()
    for folder in [*reversed(path.parents), path]:
        try:
            mode = folder.stat().st_mode
        except OSError:
            return folder, "missing"
        if not mode & stat.S_IXOTH or (read and folder == path and not mode & stat.S_IROTH):
            return folder, stat.filemode(mode)
    return None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module set to None or broken
        return False


def environment_problems(
    chapters: list[index.Chapter], mode: str, gradebook: bool = False
) -> list[str]:
    problems = []
    if any(c.hidden_tests.exists() for c in chapters):
        if not _installed("hypothesis"):
            problems.append(
                "the hidden tests need the package hypothesis, which the student install "
                f"does not include: install the grader's extra with `{GRADER_INSTALL}`"
            )
    if not _installed("pytest_timeout"):
        problems.append(f"the package pytest-timeout is missing: `{GRADER_INSTALL}`")
    if mode == "uid":
        for host in isolation.host_paths():
            blocked = _blocked_for_others(host)
            if blocked:
                folder, bits = blocked
                fix = "o+rx" if folder == host.resolve() else "o+x"  # o+x: enter, not list
                problems.append(
                    f"in the `uid` isolation mode (root without namespaces) student code runs "
                    f"as another user, who cannot read {host}: {folder} is {bits}. Let other "
                    f"users through (`chmod {fix} {folder}`) or install Python and the "
                    "course's packages where any user can read them"
                )
    for host in isolation.host_paths():
        if REPO.resolve().is_relative_to(host):
            problems.append(
                f"the course checkout {REPO} lies inside {host}, which student code is let "
                "read (the system's or Python's files): move the checkout elsewhere"
            )
    tmp = Path(tempfile.gettempdir())
    if not os.access(tmp, os.W_OK | os.X_OK):
        problems.append(f"the temporary folder {tmp} cannot be written: set TMPDIR")
    elif mode == "uid" and (blocked := _blocked_for_others(tmp, read=False)):
        folder, bits = blocked
        problems.append(
            f"in the `uid` isolation mode each sandbox is a folder under the temporary folder "
            f"{tmp}, entered by another user, who cannot pass {folder} ({bits}). Set TMPDIR to "
            f"a folder other users may enter, or `chmod o+x {folder}` (enter, not list)"
        )
    if gradebook and not (
        shutil.which("alembic") or (Path(sys.executable).parent / "alembic").exists()
    ):
        problems.append(
            "the nbgrader gradebook needs the `alembic` command, which is not installed: "
            f"`{INSTRUCTOR_INSTALL}` (or grade without --gradebook)"
        )
    return problems


UNCONFINED_FLAG = "--no-confinement"


def confinement_problems(mode: str, unconfined_ok: bool = False) -> list[str]:
    """Why a class's code may not be graded in ``mode`` (empty: it may). Grading runs
    many people's code, so it needs a mode that confines it, or the instructor's explicit
    ``--no-confinement``; a learner's ``check`` of their own code does not ask."""
    if isolation.confines(mode):
        return []
    if getattr(os, "geteuid", lambda: -1)() == 0 and mode in ("landlock", "none"):  # forced
        return [f"as root, student code would run as root in the `{mode}` mode: never"]
    if unconfined_ok:
        return []
    gaps = "; ".join(isolation.gaps(mode))
    return [
        f"student code would not be confined here (isolation mode `{mode}`: {gaps}). "
        "Grade as root (namespaces, or a uid of its own with Landlock), as a user allowed "
        "user namespaces (Ubuntu: `sysctl kernel.apparmor_restrict_unprivileged_userns=0`), "
        f"or in a Linux container or VM; or accept the risk with {UNCONFINED_FLAG}"
    ]


# ---- the reference at full marks -----------------------------------------------------


def reference_files(chapters: list[index.Chapter]) -> dict[str, bytes] | None:
    solutions = NAMED_TARGETS["solutions"]
    if not solutions.is_dir():
        return None  # a student release: no reference to prove with
    files, _ = collect.read_folder(solutions, chapters)
    return files


def cached_score(cache, plan_key: str, files: dict[str, bytes]) -> tuple[int, int] | None:
    """The reference's score of a proof cached for this very environment, if any."""
    key = proof_key(plan_key, files)
    found = cache.read_meta(_proof_name(key)) if cache is not None else None
    if not (found and found.get("key") == key):
        return None
    got, most = found.get("score") or (0, 0)
    return got, most


def remember(cache, plan_key: str, files: dict[str, bytes], score: tuple[int, int]) -> None:
    """Cache a passed proof (no cache, no harm: the next run proves again)."""
    key = proof_key(plan_key, files)
    try:
        cache.write_meta(_proof_name(key), {"key": key, "score": list(score)})
    except OSError:
        pass


def _proof_name(key: str) -> str:
    return f"preflight-{key[:40]}"


def proof_key(plan_key: str, files: dict[str, bytes]) -> str:
    h = hashlib.sha256(plan_key.encode())
    for rel in sorted(files):
        h.update(rel.encode() + hashlib.sha256(files[rel]).digest())
    return h.hexdigest()


def _failures(records: dict[str, run.Record], cuda: set[str]) -> list[str]:
    failed = {}
    for nodeid, record in records.items():
        if record.outcome == "passed" or nodeid in cuda and record.outcome == "skipped":
            continue
        first = (record.message or record.outcome).strip().splitlines()
        failed.setdefault(first[0][:300] if first else record.outcome, []).append(nodeid)
    return [
        f"{len(ids)} test(s), e.g. {ids[0]}: {why}" for why, ids in list(failed.items())[:SHOWN]
    ]


@contextlib.contextmanager
def one_prover(cache, name: str, patience: float):
    """Held while this grader proves ``name``. A second grader on this machine proving the
    same environment at the same time (two shards started together, say) waits for it, up
    to ``patience`` seconds, and then finds the proof cached instead of running the
    reference beside it. No cache, or no lock file: nobody waits."""
    handle = None
    if cache is not None:
        with contextlib.suppress(OSError):
            (cache.folder / "meta").mkdir(parents=True, exist_ok=True)
            handle = open(cache.folder / "meta" / f"{name}.lock", "a")  # noqa: SIM115
    if handle is None:
        yield
        return
    import fcntl  # here, not at the top: `grader check` also runs where there is none

    with handle:  # closing it releases the lock
        deadline = time.monotonic() + patience
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    break  # the other grader is stuck: prove on our own
                time.sleep(0.2)
        yield


def prove(
    chapters: list[index.Chapter],
    specs,
    limits,
    plan_key: str,
    tmp: Path,
    cache=None,
    gradebook: bool = False,
    twin=None,
) -> Proof:
    """The environment checks, then the reference solutions through the real pipeline
    (skipped when a cached proof for this very environment exists). ``twin``: a Future
    of the records of a submission identical to the reference, graded anyway — its run
    is the proof, so the reference is not run twice."""
    mode = isolation.mode()
    problems = environment_problems(chapters, mode, gradebook)
    if problems:
        return Proof(False, mode, problems)
    files = reference_files(chapters)
    if files is None:
        return Proof(True, mode)
    name = _proof_name(proof_key(plan_key, files))
    with one_prover(cache, name, patience=limits.wall + 60):
        if cached_score(cache, plan_key, files) is not None:
            return Proof(True, mode, cached=True)
        try:
            records = twin.result() if twin is not None else None
        except Exception:  # noqa: BLE001 - the twin's grading failed: prove on our own
            records = None
        if records is None:
            records, _ = run.grade_submission(files, chapters, specs, limits, tmp_root=tmp)
        tests = specs.result() if hasattr(specs, "result") else specs
        cuda = {t.nodeid for t in tests if t.cuda}
        points = {t.nodeid: (0 if t.cuda else t.points) for t in tests}
        got = sum(points[n] for n, r in records.items() if r.outcome == "passed")
        most = sum(points[n] for n in records)
        failures = _failures(records, cuda)
        if failures:
            problems = [
                f"the reference solutions scored {got}/{most} here, not full marks, so grades "
                "made here could not be trusted. What failed:",
                *failures,
                "if these read like a missing module or file, a permission or a path, that is "
                "the machine's setup; run `python -m grader doctor` for the checks it makes",
            ]
            return Proof(False, mode, problems, (got, most))
        if cache is not None:
            remember(cache, plan_key, files, (got, most))
        return Proof(True, mode, score=(got, most))
