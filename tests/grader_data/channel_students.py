"""Submissions that leave a marker through every channel we can name and look for
them (tests/test_grader_confinement.py, tests/test_grader_channels.py).

A *writer* submission, at import, leaves a marker through every channel — the user
keyring, files in every folder any user may write, a System V shared memory segment, an
abstract Unix socket, a lock on a file every sandbox can read — and forks processes that
keep the live ones open. A *reader* graded after it looks for each marker, and so does
the hidden phase of a student whose public phase left them (*self*); its
``gradient_at`` answers correctly only if it found none, and otherwise returns a bit
mask of what it found (``found_channels``).
"""

from __future__ import annotations

import os
import platform
import secrets

from tests.grader_data.helpers import STUB

KEYS = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(platform.machine(), (-1, -1))
CHANNELS = ("keyring", "tmp", "var_tmp", "dev_shm", "sysv_shm", "abstract_socket", "flock")
CHANNELS += ("inotify", "dnotify", "proc", "loopback_socket", "page_cache")  # live sandboxes
SHARED_FILE = os.__file__  # part of Python: readable by every sandbox in every mode
# What this test run's markers are named by: the uid mode's sandboxes share /tmp, System V
# IPC and abstract sockets with a second test run on the machine, which must not find ours.
RUN = secrets.token_hex(4)
MARKER = f"course-marker-{RUN}"

COMMON = f"""
import ctypes as _c, fcntl as _f, os as _o, socket as _s, time as _t
_libc = _c.CDLL(None, use_errno=True)
_MARK = b"course-channel-marker"
_ADD_KEY, _KEYCTL = {KEYS}
_NAME = {MARKER!r}
_FILES = tuple(_o.path.join(d, _NAME) for d in ("/tmp", "/var/tmp", "/dev/shm"))
_SHM_KEY = {0x10000000 | int(RUN, 16) & 0x0FFFFFFF}
_SOCKET = "\\0" + _NAME
_SHARED = {SHARED_FILE!r}
"""

WRITER = (
    STUB
    + COMMON
    + """
def _leave():
    _libc.syscall(_ADD_KEY, b"user", _NAME.encode(), _MARK, len(_MARK), _c.c_long(-4))
    for path in _FILES:
        try:
            with open(path, "wb") as f:
                f.write(_MARK)
            _o.chmod(path, 0o644)
        except OSError:
            pass
    _libc.shmget(_SHM_KEY, 4096, 0o1000 | 0o666)  # IPC_CREAT
    if _o.getpid() == 1:
        return  # a PID namespace ends every process with us: leave the uid free for reuse
    if _o.fork() == 0:  # a process that keeps the live channels open, out of our group
        _o.setsid()
        try:
            server = _s.socket(_s.AF_UNIX, _s.SOCK_STREAM)
            server.bind(_SOCKET)
            server.listen(4)
        except OSError:
            pass
        try:
            held = open(_SHARED, "rb")
            _f.flock(held, _f.LOCK_SH)
        except OSError:
            pass
        _t.sleep(600)
        _o._exit(0)
    _t.sleep(0.5)


_leave()
"""
)

READER = (
    STUB
    + COMMON
    + """
def _found():
    mask = 0
    if _libc.syscall(_KEYCTL, 10, _c.c_long(-4), b"user", _NAME.encode(), 0) >= 0:
        mask |= 1  # KEYCTL_SEARCH in the user keyring
    for bit, path in zip((2, 4, 8), _FILES):
        mask |= bit if _o.path.exists(path) else 0
    if _libc.shmget(_SHM_KEY, 0, 0) >= 0:
        mask |= 16
    try:  # closed at once: a connection kept open would fill the holder's backlog
        with _s.socket(_s.AF_UNIX, _s.SOCK_STREAM) as client:
            client.settimeout(2)  # a full backlog would block a plain connect
            client.connect(_SOCKET)
            mask |= 32
    except OSError:
        pass
    try:
        with open(_SHARED, "rb") as probe:
            _f.flock(probe, _f.LOCK_EX | _f.LOCK_NB)
    except BlockingIOError:
        mask |= 64
    except OSError:
        pass
    return mask


def gradient_at(w, x, target):
    found = _found()
    return -16.0 if not found else float(found)
"""
)


# One student whose public phase leaves the markers and whose hidden phase (a process of
# its own, possibly under the same uid) looks for them: right answers only if it finds none.
SELF = (
    WRITER.replace("\n_leave()\n", "\n")
    + READER.rsplit("def gradient_at", 1)[0].split(COMMON, 1)[1]
    + """
from pathlib import Path as _Path

_HIDDEN = (_Path(__file__).resolve().parents[2] / "grader").exists()
if not _HIDDEN:
    _leave()


def gradient_at(w, x, target):
    found = _found() if _HIDDEN else 0
    return 2 * x * (x * w - target) + (1e6 * found if found else 0.0)
"""
)


def found_channels(value: float) -> list[str]:
    return [name for bit, name in enumerate(CHANNELS) if int(value) >> bit & 1]


def returned(said: str) -> float:
    """The value a failed probe's message reports the student's function gave."""
    import re

    found = re.search(r"(?:returned|got) (-?[0-9.]+(?:e[-+]?[0-9]+)?)", said)
    return float(found.group(1)) if found else 0.0
