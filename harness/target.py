"""The one mechanism that chooses which implementation the tests exercise.

A test file never imports the student's module directly. It asks for it by chapter
and module name::

    ag = chapter_module("ch02", "autograd")
    ...
    ag.reachable_params(loss, named)

and the name is resolved, at the moment of use, against the current target root: the
student's ``exercises/``, the reference ``solutions/``, or any folder shaped like
``exercises/`` (a submission). The pytest option ``--impl`` sets the root once per
session (see ``harness.plugin``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
NAMED_TARGETS = {"exercises": REPO / "exercises", "solutions": REPO / "solutions"}

# The chosen implementation also lives in the environment, so that worker processes a
# test starts with "spawn" or "forkserver" (DataLoader workers) load the same one.
ROOT_ENV = "COURSE_IMPL"
_root: Path = Path(os.environ.get(ROOT_ENV) or NAMED_TARGETS["exercises"])
_on_path: set[str] = set()
_course: Path = REPO / "course"
# While the selfcheck maps which tests reach which names (``harness.runner``): every name
# read from a module under test, in order; None otherwise.
TOUCHES: list[str] | None = None
_cache: dict[tuple[Path, float], ModuleType] = {}
_forbidden: str | None = None


class TargetImportError(Exception):
    """The module under test could not be imported (missing file, syntax error, ...)."""


def resolve_impl(impl: str | Path) -> Path:
    """Map ``exercises`` / ``solutions`` / a path to an existing folder; ValueError if none."""
    path = NAMED_TARGETS.get(str(impl), Path(impl)).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(
            f"--impl {impl!r}: expected 'exercises', 'solutions' or a folder shaped like "
            f"exercises/ (chNN/<topic>.py), but {path} is not a folder"
        )
    return path


def set_root(impl: str | Path) -> Path:
    """Make ``impl`` the target for every ``chapter_module`` lookup from now on."""
    global _root
    _root = resolve_impl(impl)
    os.environ[ROOT_ENV] = str(_root)
    return _root


def current_root() -> Path:
    return _root


def forbid_loading(reason: str) -> None:
    """From now on no student module may be imported in this process (the grader's
    trusted side, where tests reach the student's code only through probes)."""
    global _forbidden
    _forbidden = reason


def set_course_root(path: Path) -> None:
    """Where ``course_file`` looks (the sandbox's copy of the chapter's data)."""
    global _course
    _course = Path(path)


def module_path(chapter: str, module: str) -> Path:
    return _root / chapter / f"{module}.py"


def _importable(name: str, chapter: str, mod: ModuleType | None = None) -> None:
    """Make ``name`` (``chNN.<module>``) import from the current root, here and in any
    worker process started from here: the root is on ``sys.path`` (alone among roots)
    and nothing of that name from another root is left in ``sys.modules``."""
    root = str(_root)
    for other in _on_path - {root}:
        while other in sys.path:
            sys.path.remove(other)
    _on_path.intersection_update({root})
    if root not in sys.path:
        sys.path.append(root)  # last: it never shadows a library
        _on_path.add(root)
    package = sys.modules.get(chapter)
    if package is not None and str(_root / chapter) not in list(getattr(package, "__path__", [])):
        del sys.modules[chapter]
    if mod is not None:
        sys.modules[name] = mod
    else:
        sys.modules.pop(name, None)


def load(chapter: str, module: str) -> ModuleType:
    """Import ``<root>/<chapter>/<module>.py`` as ``chapter.module``; cached per file version.

    The real, importable name lets pickling, dataclasses and worker processes (any
    multiprocessing start method) find the module and its classes.
    """
    if _forbidden:
        raise RuntimeError(
            f"course bug: {chapter}/{module}.py was touched outside a probe ({_forbidden})"
        )
    path = module_path(chapter, module)
    if not path.is_file():
        raise TargetImportError(
            f"{chapter}/{module}.py not found under {_root}: the tests need this file "
            f"(keep the name and location of the exercise module)"
        )
    name = f"{chapter}.{module}"
    key = (path, path.stat().st_mtime)
    if key in _cache:
        _importable(name, chapter, _cache[key])
        return _cache[key]
    _importable(name, chapter)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException as exc:  # noqa: BLE001 - student code may raise anything, even SystemExit
        sys.modules.pop(name, None)
        raise TargetImportError(
            f"importing {chapter}/{module}.py failed with {type(exc).__name__}: {exc} "
            f"(the module must import cleanly before any test can run)"
        ) from None
    _cache[key] = mod
    return mod


class ChapterModule:
    """A lazy stand-in for the module under test: attribute access imports it on demand.

    Import problems therefore fail each test with one clear sentence instead of
    breaking collection of the whole test file. Inside a probe an attribute is the
    student's own object; in a test body it is reached through ``harness.probe``'s
    transport (plain data in and out), so the same test runs split in the grader.
    """

    def __init__(self, chapter: str, module: str) -> None:
        self._chapter = chapter
        self._module = module

    def __getattr__(self, attr: str):
        from harness import probe

        if TOUCHES is not None:
            TOUCHES.append(attr)
        return probe.current().attr(self._chapter, self._module, attr, lambda: self._live(attr))

    def _live(self, attr: str):
        mod = load(self._chapter, self._module)
        try:
            return getattr(mod, attr)
        except AttributeError:
            raise AttributeError(
                f"{self._chapter}/{self._module}.py defines no {attr!r}: keep the names "
                f"and signatures of the exercise (they are the contract the tests use)"
            ) from None

    def __repr__(self) -> str:
        return f"<module under test {self._chapter}/{self._module}.py from {_root}>"


def chapter_module(chapter: str, module: str) -> ChapterModule:
    """The module under test for ``chapter``, resolved against the current target."""
    return ChapterModule(chapter, module)


def course_file(relpath: str) -> Path:
    """A file the course ships for tests and readings, e.g. ``course_file("data/ch10_corpus.txt")``."""
    path = _course / relpath
    if not path.exists():
        raise FileNotFoundError(f"course file {relpath!r} is missing from {_course}")
    return path


class ReferenceModule:
    """The reference solution, for hidden tests that compare the submission with it on
    generated inputs. It runs on the trusted side only (never beside student code), and
    exists wherever hidden tests do (the grader, a full checkout; never a student release).
    """

    def __init__(self, chapter: str, module: str) -> None:
        self._chapter = chapter
        self._module = module

    def __getattr__(self, attr: str):
        from harness import probe

        if isinstance(probe.current(), probe.StudentSide):
            raise RuntimeError(
                "course bug: the reference solution is never used beside student code"
            )
        path = NAMED_TARGETS["solutions"] / self._chapter / f"{self._module}.py"
        key = (path, path.stat().st_mtime)
        mod = _references.get(key)
        if mod is None:
            name = f"_reference_{self._chapter}_{self._module}_{len(_references)}"
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
            _references[key] = mod
        return getattr(mod, attr)


_references: dict[tuple[Path, float], ModuleType] = {}


def reference_module(chapter: str, module: str) -> ReferenceModule:
    """The reference solution of ``chapter``'s module (trusted side; hidden tests only)."""
    return ReferenceModule(chapter, module)
