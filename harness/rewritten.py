"""pytest's assertion rewrite of each test file, done once per process.

pytest rewrites a test file's asserts when it imports it and caches the result in a pyc
beside the file, but not where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, as on
this project's CI machines). The selfcheck imports a chapter's test files afresh for each
of hundreds of runs in one process, and the grader's warm parent forks a trusted process
per run: without a cache each run paid the rewrite again, the largest fixed cost of a
variant's run.

    rewritten.keep()                 # from now on, each file is rewritten once
    rewritten.ahead(paths)           # rewrite these now (a warm parent, before it forks)

The cache is keyed by the file's path and bytes, so an edited file is rewritten anew.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

from _pytest.assertion import rewrite

_done: dict[tuple[str, bytes, bool], tuple] = {}


def keep() -> None:
    """Route pytest's rewrite of a test file through this process's cache (idempotent)."""
    if getattr(rewrite._rewrite_test, "keeps_rewrites", False):
        return
    rewrite_anew = rewrite._rewrite_test

    @functools.wraps(rewrite_anew)
    def rewrite_once(fn: Path, config) -> tuple:
        # the only setting the rewritten code depends on (off unless a project sets it)
        hook = bool(config is not None and config.getini("enable_assertion_pass_hook"))
        key = (str(fn), Path(fn).read_bytes(), hook)
        if key not in _done:
            _done[key] = rewrite_anew(fn, config)
        return _done[key]

    rewrite_once.keeps_rewrites = True
    rewrite._rewrite_test = rewrite_once


def ahead(paths) -> None:
    """Rewrite each of ``paths`` now, as pytest would with its default settings; a file
    that cannot be read or parsed is left for pytest to report when it imports it."""
    keep()
    for path in paths:
        with contextlib.suppress(OSError, SyntaxError, ValueError):
            rewrite._rewrite_test(Path(path), None)
