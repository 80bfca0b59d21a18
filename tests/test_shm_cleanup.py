"""The landlock mode's cleanup of the shared /dev/shm (grader/isolation/shm.py): what
appeared while a student ran goes, unless a live process holds it open or mapped, and
nothing that was there before is touched."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from grader.isolation import shm

pytestmark = pytest.mark.skipif(not os.path.isdir(shm.SHARED), reason="no /dev/shm here")

HOLD = """
import mmap, sys, time
f = open(sys.argv[1], "r+b")
if sys.argv[2] == "map":
    m = mmap.mmap(f.fileno(), 4096)
    f.close()
print("holding", flush=True)
time.sleep(60)
"""


def holder(path: Path, how: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), how], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_only_new_unheld_entries_are_removed():
    tag = f"shm-test-{uuid.uuid4().hex[:8]}"
    paths = {n: Path(shm.SHARED, f"{tag}-{n}") for n in ("old", "left", "open", "mapped", "dir")}
    paths["old"].write_bytes(b"there before")
    before = shm.snapshot()
    procs = []
    try:
        for name in ("left", "open", "mapped"):
            paths[name].write_bytes(b"\0" * 4096)
        paths["dir"].mkdir()
        (paths["dir"] / "inside").write_text("a folder left behind")
        procs = [holder(paths["open"], "open"), holder(paths["mapped"], "map")]
        removed = shm.remove_new(before)
        assert set(removed) == {paths["left"].name, paths["dir"].name}, removed
        assert paths["old"].exists(), "an entry that was there before was removed"
        assert paths["open"].exists() and paths["mapped"].exists(), (
            "a file a live process holds open or mapped was removed"
        )
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for p in paths.values():
            if p.is_dir():
                for child in p.iterdir():
                    child.unlink()
                p.rmdir()
            else:
                p.unlink(missing_ok=True)
