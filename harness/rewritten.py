"""pytest's assertion rewrite of each test file, done once per process.

pytest rewrites a test file's asserts when it imports it and caches the result in a pyc
beside the file, but not where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, as on
this project's CI machines). The selfcheck imports a chapter's test files afresh for each
of hundreds of runs in one process: without a cache each run paid the rewrite again.
(The grader's trusted processes run under ``python -E``, which ignores that variable, so
pytest's own cache on disk serves them.)

    rewritten.keep()                 # from now on, each file is rewritten once

The cache is keyed by the file's path and bytes, so an edited file is rewritten anew.
"""

from __future__ import annotations

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
