"""No channel between student processes that live at the same time: a second grader on
the machine, or a second job of the same one, finds nothing of a sandbox that holds
every channel open (tests/grader_data/channel_students.py). What one submission leaves
for the *next* one, and what a sandbox can open by path, are checked in every column of
tests/test_grader_confinement.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader import isolation
from grader.isolation import uids
from harness.target import REPO
from tests.grader_data.channel_students import READER, WRITER, found_channels, returned
from tests.grader_data.helpers import readable_python_prefix, write_submission

pytestmark = pytest.mark.timeout(900)


def grader_env(tmp_path: Path) -> dict[str, str]:
    """A grader's environment: the session's sandbox uids, a home of the test's own."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "GRADER_UID_BASE")}
    return env | {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}


MODES = ["namespace", "uid"] if isolation.mode() == "namespace" else [isolation.mode()]


# ---- two graders at the same time -----------------------------------------------------

LIVE = """
import signal as _sig
from pathlib import Path as _Path

_BEACON = _o.path.join(_o.path.dirname(_o.__file__), "this.py")  # nothing else opens it
_PORT = 47321
"""

# Leaves every marker, then holds them live (a listening socket, a lock, a file it keeps
# reading) until the test ends its grader; renames itself so the test sees it is holding.
HOLDER = (
    WRITER.replace("\n_leave()\n", "\n")
    + LIVE
    + """
def gradient_at(w, x, target):
    _leave()
    held = []
    for family, address in ((_s.AF_UNIX, _SOCKET), (_s.AF_INET, ("127.0.0.1", _PORT))):
        try:
            server = _s.socket(family, _s.SOCK_STREAM)
            server.bind(address)
            server.listen(4)
            held.append(server)
        except OSError:
            pass
    try:
        lock = open(_SHARED, "rb")
        _f.flock(lock, _f.LOCK_SH)
        held.append(lock)
    except OSError:
        pass
    _libc.prctl(15, b"course-holder", 0, 0, 0)  # PR_SET_NAME
    while True:
        with open(_BEACON, "rb") as beacon:
            beacon.read(1)
        _t.sleep(0.02)
"""
)

# Looks for everything the holder keeps live, besides what it left.
LIVE_READER = (
    READER.rsplit("def gradient_at", 1)[0]
    + LIVE
    + """
def _watched():
    mask = 0
    fd = _libc.inotify_init1(0o4000)  # IN_NONBLOCK
    if fd >= 0 and _libc.inotify_add_watch(fd, _BEACON.encode(), 0x21) >= 0:  # OPEN|ACCESS
        _t.sleep(2)
        try:
            mask |= 128 if _o.read(fd, 4096) else 0
        except BlockingIOError:
            pass
    hits = []
    _sig.signal(_sig.SIGIO, lambda *_: hits.append(1))
    folder = _o.open(_o.path.dirname(_BEACON), _o.O_RDONLY)
    if _libc.fcntl(folder, 1026, _c.c_int(-0x7FFFFFFF)) == 0:  # F_NOTIFY, ACCESS|MULTISHOT
        _t.sleep(2)
        mask |= 256 if hits else 0
    for comm in _Path("/proc").glob("[0-9]*/comm"):
        try:
            mask |= 512 if comm.read_text().strip() == "course-holder" else 0
        except OSError:
            pass
    try:
        _s.create_connection(("127.0.0.1", _PORT), timeout=2).close()
        mask |= 1024
    except OSError:
        pass
    return mask | _cached()


def _cached():
    # 2048 if this process can ask whether the beacon's first page is in the page cache
    # (which the holder decides by reading it, or dropping it): mincore, or a read that
    # will not wait (whether it succeeds or would block, it has told).
    fd = _o.open(_BEACON, _o.O_RDONLY)
    try:
        _libc.mmap.restype = _c.c_void_p
        _libc.mmap.argtypes = [_c.c_void_p, _c.c_size_t, _c.c_int, _c.c_int, _c.c_int, _c.c_long]
        page = _libc.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        vec = _c.create_string_buffer(1)
        if page not in (None, 2**64 - 1) and _libc.mincore(_c.c_void_p(page), 4096, vec) == 0:
            return 2048
        try:
            _o.preadv(fd, [bytearray(16)], 0, _o.RWF_NOWAIT)
            return 2048
        except BlockingIOError:
            return 2048
        except OSError:
            return 0
    finally:
        _o.close(fd)


def gradient_at(w, x, target):
    found = _found() | _watched()
    return -16.0 if not found else float(found)
"""
)


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        pid = int(next(x for x in status.splitlines() if x.startswith("PPid:")).split()[1])
    return False


def _holding(grader: subprocess.Popen, wait_s: float) -> int:
    """The pid of ``grader``'s holder once it holds its markers (renamed itself); a
    holder of an earlier test still ending is not it."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end and grader.poll() is None:
        for comm in Path("/proc").glob("[0-9]*/comm"):
            try:
                pid = int(comm.parent.name)
                if comm.read_text().strip() == "course-holder" and _descends_from(pid, grader.pid):
                    return pid
            except (OSError, ValueError, StopIteration):
                continue
        time.sleep(0.5)
    pytest.fail(f"the holder never started holding (grader exit {grader.poll()})")


# What the uid mode cannot close between two sandboxes alive at the same time, as
# grader/README.md states it: whether a name exists in /dev/shm (each keeps its own files
# there, unreadable by the other, but Landlock does not hide a name from a lookup).
# Everything else must carry nothing there too.
UID_MODE_SHARED_WHILE_LIVE = {"dev_shm"}


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids need root")
@pytest.mark.parametrize("mode", MODES)
def test_nothing_passes_between_sandboxes_of_two_graders_running_at_once(tmp_path, mode):
    """A second grader on the same machine, with the same sandbox uids and its own
    TMPDIR (two jobs of a cluster), grades a reader while the first grader's student
    holds every channel live: the reader finds none (in the uid mode, none beyond what
    the README says that mode shares), and neither grader ends the other's sandbox."""
    env = grader_env(tmp_path)
    prefix, allowed = [], set()
    if mode == "uid":
        env["GRADER_ISOLATION"] = "uid"
        prefix, allowed = readable_python_prefix(), UID_MODE_SHARED_WHILE_LIVE
    runs = {}
    jobs = Path(tempfile.mkdtemp(prefix="two-graders-", dir="/tmp"))  # two cluster jobs' TMPDIRs:
    jobs.chmod(0o711)  # each enterable by its sandboxes' users, as the uid mode needs
    for name, module in (("a", HOLDER), ("b", LIVE_READER)):
        (jobs / f"tmp-{name}").mkdir(mode=0o711)
        write_submission(tmp_path / f"subs-{name}", f"{name}_student", module)
        runs[name] = (
            [*prefix, sys.executable, "-m", "grader", "grade", str(tmp_path / f"subs-{name}"),
             "--out", str(tmp_path / f"out-{name}"), "--chapters", "ch00", "--jobs", "1",
             "--no-gradebook", "--test-timeout", "600"],
            env | {"TMPDIR": str(jobs / f"tmp-{name}")},
        )  # fmt: skip
    with open(tmp_path / "a.log", "w") as log:
        first = subprocess.Popen(
            runs["a"][0], cwd=REPO, env=runs["a"][1], stdout=log, stderr=log,
            start_new_session=True,
        )  # fmt: skip
    holder_uid = None
    try:
        holder = _holding(first, 600)
        holder_uid = Path(f"/proc/{holder}").stat().st_uid
        done = subprocess.run(
            runs["b"][0], cwd=REPO, env=runs["b"][1], capture_output=True, text=True,
            timeout=800,
        )  # fmt: skip
        still_holding = Path(f"/proc/{holder}/comm").exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, 9)
        first.wait()
        if holder_uid is not None:  # the uid mode's sandboxes are not bound to a killed grader
            uids.clear_uid(holder_uid)
            end = time.monotonic() + 30
            while Path(f"/proc/{holder}").exists() and time.monotonic() < end:
                time.sleep(0.1)  # gone before the next test looks for a holder
        shutil.rmtree(jobs, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert still_holding, "the first grader's sandbox ended while the second one ran"
    import json

    data = json.loads((tmp_path / "out-b" / "b_student" / "results.json").read_text())
    probe = next(t for t in data["tests"] if t["name"].endswith("test_gradient_at_the_books_point"))
    said = probe["output"]
    found = set() if probe["status"] == "passed" else set(found_channels(returned(said)))
    if probe["status"] != "passed" and not found:
        pytest.fail(f"{mode} mode: the reader failed without naming a channel: {said}")
    print(f"{mode} mode: a live sandbox of another grader showed {sorted(found) or 'nothing'}")
    assert found <= allowed, (
        f"{mode} mode: the reader found {sorted(found - allowed)} of a live sandbox "
        f"(grader/README.md says this mode shares only {sorted(allowed) or 'nothing'}): {said}"
    )


HOLD_A_UID = """
import os, sys, time
from grader.isolation import uids
slot = uids.UidSlot()
print(slot.uid, flush=True)
sys.stdin.read()  # hold the uid until the test closes our stdin
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids need root")
def test_two_graders_with_their_own_tmpdir_never_share_a_sandbox_uid(tmp_path):
    """The lock that makes a uid one grader's must be found by every grader on the
    machine, whatever TMPDIR each was given (a cluster sets one per job): two graders on
    one uid would clear each other's live sandboxes."""
    held = []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            env = os.environ | {"TMPDIR": str(tmp_path / name)}
            holder = subprocess.Popen(
                [sys.executable, "-c", HOLD_A_UID], cwd=REPO, env=env, text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )  # fmt: skip
            held.append((holder, holder.stdout.readline().strip()))
    finally:
        for holder, _ in held:
            holder.stdin.close()
            holder.wait(timeout=60)
    (_, first), (_, second) = held
    assert first and second and first != second, f"both graders took uid {first}"
