"""Results journaled per submission as they finish, so a killed run loses nothing.

One JSON file per student under ``OUT/journal/``, keyed by a hash of the submission's
module files and of everything the tests depend on (test files, harness, course index
and data, the worker, the limits). It is written to a temporary file, flushed to disk
and renamed over the old one, so a SIGKILL at any moment leaves either the old entry
or the new one, never half of one. A rerun reuses an entry whose key still matches.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from grader import sandbox
from harness import index
from harness.target import REPO


def tests_digest(chapters: list[index.Chapter], settings: dict) -> str:
    """A hash of everything besides the submission that decides the grades."""
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in sandbox.support_files(chapters):
        h.update(str(path.relative_to(REPO) if path.is_relative_to(REPO) else path.name).encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def write_json_atomic(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def user_cache() -> Path:
    """The grader's per-user cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``): what
    stays the same between runs and output folders (trusted collections, proofs, the
    similarity baseline)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pytorch-course-grader"


class Journal:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path(self, student: str) -> Path:
        return self.folder / f"{student}.json"

    def get(self, student: str, key: str | None = None) -> dict | None:
        """The entry for ``student`` (only if its key is ``key``, when given)."""
        try:
            entry = json.loads(self.path(student).read_text())
        except (OSError, ValueError):
            return None
        if key is not None and entry.get("key") != key:
            return None
        return entry

    def put(self, student: str, entry: dict) -> None:
        write_json_atomic(self.path(student), entry)

    def students(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.json") if not p.name.startswith("."))

    def write_meta(self, name: str, data) -> None:
        write_json_atomic(self.folder / "meta" / f"{name}.json", data)

    def read_meta(self, name: str):
        try:
            return json.loads((self.folder / "meta" / f"{name}.json").read_text())
        except (OSError, ValueError):
            return None
