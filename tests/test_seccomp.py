"""The seccomp filter of student processes (``grader.seccomp``), on its own: each refused
call is refused (``EPERM``) once it is installed and reaches the kernel before, the calls
honest code makes still work, and its syscall numbers are the kernel's (checked against
libseccomp's tables where that library is installed). The channel test shows the same
refusals end to end, between sandboxes."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import platform

import pytest

from grader import seccomp

pytestmark = pytest.mark.skipif(
    platform.machine() not in seccomp.ARCHES, reason="no filter for this machine"
)

# The probes' own syscall numbers (not the module's: it is what is under test).
NUMBERS = {
    "x86_64": {"keyctl": 250, "io_uring_setup": 425, "cachestat": 451},
    "aarch64": {"keyctl": 219, "io_uring_setup": 425, "cachestat": 451},
}

PROBES = r"""
import ctypes, errno, fcntl, mmap, os, tempfile
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
KEYCTL, IO_URING_SETUP, CACHESTAT = NUMBERS["keyctl"], NUMBERS["io_uring_setup"], NUMBERS["cachestat"]


def outcome(call):
    '''"ok", or the name of the errno the call failed with.'''
    ctypes.set_errno(0)
    try:
        result = call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    if isinstance(result, int) and result < 0:
        return errno.errorcode.get(ctypes.get_errno(), "?")
    return "ok"


def probes(shared, scratch):
    page = libc.mmap(None, 4096, mmap.PROT_READ, mmap.MAP_SHARED, shared, 0)
    vec = ctypes.create_string_buffer(1)
    ranges, stat = (ctypes.c_uint64 * 2)(0, 4096), (ctypes.c_uint64 * 5)()
    params = ctypes.create_string_buffer(120)
    buf = bytearray(16)
    return {
        "keyctl": lambda: libc.syscall(KEYCTL, 0, ctypes.c_long(-4), 0),
        "flock": lambda: fcntl.flock(shared, fcntl.LOCK_SH | fcntl.LOCK_NB),
        "fcntl record lock": lambda: fcntl.lockf(scratch, fcntl.LOCK_EX | fcntl.LOCK_NB),
        "F_NOTIFY": lambda: fcntl.fcntl(os.open("/tmp", os.O_RDONLY), 1026, 1),
        "inotify": lambda: libc.inotify_init1(0),
        "mincore": lambda: libc.mincore(ctypes.c_void_p(page), 4096, vec),
        "cachestat": lambda: libc.syscall(CACHESTAT, shared, ranges, stat, 0),
        "preadv2 RWF_NOWAIT": lambda: os.preadv(shared, [buf], 0, os.RWF_NOWAIT),
        "pwritev2 RWF_NOWAIT": lambda: os.pwritev(scratch, [b"x"], 0, os.RWF_NOWAIT),
        "io_uring": lambda: libc.syscall(IO_URING_SETUP, 4, params),
    }


def allowed(shared, scratch):
    return {
        "getpid": lambda: os.getpid(),
        "preadv2 without flags": lambda: os.preadv(shared, [bytearray(16)], 0, 0),
        "pwritev2 RWF_DSYNC": lambda: os.pwritev(scratch, [b"x"], 0, os.RWF_DSYNC),
        "fcntl F_GETFL": lambda: fcntl.fcntl(shared, fcntl.F_GETFL),
        "fcntl F_SETFD": lambda: fcntl.fcntl(scratch, fcntl.F_SETFD, fcntl.FD_CLOEXEC),
        "read": lambda: os.pread(shared, 16, 0),
    }


def run(install):
    shared = os.open(os.__file__, os.O_RDONLY)
    scratch = tempfile.TemporaryFile()
    fd = scratch.fileno()
    before = {name: outcome(call) for name, call in probes(shared, fd).items()}
    install()
    after = {name: outcome(call) for name, call in probes(shared, fd).items()}
    still = {name: outcome(call) for name, call in allowed(shared, fd).items()}
    return {"before": before, "after": after, "allowed": still}
"""


def filtered_child() -> dict:
    """``PROBES`` run in a forked child (the filter cannot be removed once installed)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            scope = {"NUMBERS": NUMBERS[platform.machine()]}
            exec(PROBES, scope)  # noqa: S102 - our own probe code
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(38, 1, 0, 0, 0)  # no_new_privs, as every student process has it
            result = scope["run"](seccomp.install)
            os.write(write, json.dumps(result).encode())
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            os.write(write, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    result = json.loads(data)
    assert "error" not in result, result["error"]
    return result


def test_every_refused_call_is_refused_and_honest_calls_still_work():
    result = filtered_child()
    reached = {name for name, seen in result["before"].items() if seen != "EPERM"}
    assert {"flock", "fcntl record lock", "inotify", "mincore", "preadv2 RWF_NOWAIT"} <= reached, (
        f"the probes do not reach the kernel without the filter here: {result['before']}"
    )
    not_refused = {name: seen for name, seen in result["after"].items() if seen != "EPERM"}
    assert not not_refused, (
        f"with the filter installed these calls were not refused: {not_refused} "
        f"(before it: {result['before']})"
    )
    broken = {name: seen for name, seen in result["allowed"].items() if seen != "ok"}
    assert not broken, f"the filter refuses calls honest code makes: {broken}"


def test_the_refused_numbers_are_the_kernels():
    """The numbers are written out by hand for each architecture: check them against
    libseccomp's own tables (an installed library, not a dependency of the course)."""
    path = ctypes.util.find_library("seccomp")
    if path is None:
        pytest.skip("libseccomp is not installed here")
    lib = ctypes.CDLL(path)
    resolve = lib.seccomp_syscall_resolve_name_arch
    resolve.argtypes, resolve.restype = [ctypes.c_uint32, ctypes.c_char_p], ctypes.c_int
    wrong = {}
    for machine, (audit, calls, fcntl_nr, nowait) in seccomp.ARCHES.items():
        named = {**calls, "fcntl": fcntl_nr, "preadv2": nowait[0], "pwritev2": nowait[1]}
        for name, nr in named.items():
            known = resolve(audit, name.encode())
            if known != nr:
                wrong[f"{machine} {name}"] = (nr, known)
    assert not wrong, f"(ours, libseccomp's) syscall numbers differ: {wrong}"


def test_an_unknown_machine_gets_no_filter_and_is_told_so():
    assert seccomp.program("sparc64") is None
    code = seccomp.program()
    assert code and len(code) % 8 == 0 and len(code) // 8 < 4096  # the kernel's BPF limit
