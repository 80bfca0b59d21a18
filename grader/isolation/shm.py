"""What a student process leaves in ``/dev/shm`` where nothing else keeps it apart.

In the ``landlock`` mode the student runs as the instructor's own user and shares the
machine's ``/dev/shm`` (multiprocessing's semaphores need it writable), so a file left there
would reach the next student. When a student process ends, the entries that appeared while
it ran, owned by this user and held open or mapped by no live process, are removed: what a
running program of the instructor's keeps (a browser's shared memory) is never touched.
"""

from __future__ import annotations

import os
import shutil

from grader.isolation.declaration import SHARED_MEMORY as SHARED
from grader.isolation.uids import live_processes_of

Snapshot = frozenset[tuple[str, int]]


def snapshot() -> Snapshot:
    """The entries of ``/dev/shm`` now, by name and inode."""
    try:
        with os.scandir(SHARED) as it:
            return frozenset((e.name, e.inode()) for e in it)
    except OSError:
        return frozenset()


def _held(paths: set[str]) -> set[str]:
    """Which of ``paths`` a live process of this user has open or mapped."""
    held = set()
    for pid in live_processes_of(os.geteuid()):
        base = f"/proc/{pid}"
        try:
            for fd in os.listdir(f"{base}/fd"):
                try:
                    target = os.readlink(f"{base}/fd/{fd}")
                except OSError:
                    continue
                if target in paths:
                    held.add(target)
            with open(f"{base}/maps") as maps:
                for line in maps:
                    fields = line.split(maxsplit=5)
                    if len(fields) == 6 and fields[5].rstrip("\n") in paths:
                        held.add(fields[5].rstrip("\n"))
        except OSError:
            continue  # a process that ended meanwhile holds nothing
    return held


def remove_new(before: Snapshot) -> list[str]:
    """Remove what appeared in ``/dev/shm`` since ``before``, is this user's, and nothing
    holds; the names removed."""
    me = os.geteuid()
    try:
        with os.scandir(SHARED) as it:
            entries = list(it)
    except OSError:
        return []
    new = []
    for e in entries:
        try:
            if (e.name, e.inode()) in before or e.stat(follow_symlinks=False).st_uid != me:
                continue
        except OSError:
            continue
        new.append(e)
    if not new:
        return []
    held = _held({e.path for e in new})
    removed = []
    for e in new:
        if e.path in held:
            continue
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            removed.append(e.name)
        except OSError:
            continue
    return removed
