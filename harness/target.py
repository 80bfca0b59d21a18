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
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
NAMED_TARGETS = {"exercises": REPO / "exercises", "solutions": REPO / "solutions"}

_root: Path = NAMED_TARGETS["exercises"]
_cache: dict[tuple[Path, float], ModuleType] = {}


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
    return _root


def current_root() -> Path:
    return _root


def module_path(chapter: str, module: str) -> Path:
    return _root / chapter / f"{module}.py"


def load(chapter: str, module: str) -> ModuleType:
    """Import ``<root>/<chapter>/<module>.py`` under a private name; cached per file version."""
    path = module_path(chapter, module)
    if not path.is_file():
        raise TargetImportError(
            f"{chapter}/{module}.py not found under {_root}: the tests need this file "
            f"(keep the name and location of the exercise module)"
        )
    key = (path, path.stat().st_mtime)
    if key in _cache:
        return _cache[key]
    name = f"_target_{chapter}_{module}_{len(_cache)}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and pickling look the module up by name
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
    breaking collection of the whole test file.
    """

    def __init__(self, chapter: str, module: str) -> None:
        self._chapter = chapter
        self._module = module

    def __getattr__(self, attr: str):
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
    path = REPO / "course" / relpath
    if not path.exists():
        raise FileNotFoundError(f"course file {relpath!r} is missing from {REPO / 'course'}")
    return path
