"""The seccomp filter of student processes (``grader.isolation.seccomp``), on its own:
each refused call is refused (``EPERM``) once it is installed and reaches the kernel
before, the calls honest code makes still work, and its syscall numbers are the kernel's
(checked against libseccomp's tables where that library is installed). The channel test
shows the same refusals end to end, between sandboxes."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import platform
import signal

import pytest

from grader.isolation import seccomp

pytestmark = pytest.mark.skipif(
    platform.machine() not in seccomp.ARCHES, reason="no filter for this machine"
)

# The probes' own syscall numbers (not the module's: it is what is under test).
NUMBERS = {
    "x86_64": {"keyctl": 250, "io_uring_setup": 425, "cachestat": 451},
    "aarch64": {"keyctl": 219, "io_uring_setup": 425, "cachestat": 451},
}

PROBES = r"""
import ctypes, errno, fcntl, mmap, os, socket, tempfile
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
        "shmget": lambda: libc.shmget(0, 4096, 0o1600),  # IPC_PRIVATE, IPC_CREAT
        "msgget": lambda: libc.msgget(0, 0o1600),
        "semget": lambda: libc.semget(0, 1, 0o1600),
        "mq_open": lambda: libc.mq_open(b"/course-probe", os.O_CREAT | os.O_RDWR, 0o600, None),
        "TCP socket": lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close(),
        "UDP socket over IPv6": lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close(),
    }


def private(folder):  # what private_files refuses besides: opening a file to others
    path = os.path.join(folder, "mine")
    open(path, "w").close()
    return {
        "chmod 644": lambda: os.chmod(path, 0o644),
        "fchmod 604": lambda: os.fchmod(os.open(path, os.O_RDONLY), 0o604),
        "umask 022": lambda: os.umask(0o022),
        "setxattr (an ACL)": lambda: os.setxattr(path, "user.course", b"x"),
    }


def allowed(shared, scratch):
    return {
        "getpid": lambda: os.getpid(),
        "preadv2 without flags": lambda: os.preadv(shared, [bytearray(16)], 0, 0),
        "pwritev2 RWF_DSYNC": lambda: os.pwritev(scratch, [b"x"], 0, os.RWF_DSYNC),
        "fcntl F_GETFL": lambda: fcntl.fcntl(shared, fcntl.F_GETFL),
        "fcntl F_SETFD": lambda: fcntl.fcntl(scratch, fcntl.F_SETFD, fcntl.FD_CLOEXEC),
        "read": lambda: os.pread(shared, 16, 0),
        "Unix socket": lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close(),
        "socketpair": lambda: [s.close() for s in socket.socketpair()],
    }


def private_allowed(folder):
    path = os.path.join(folder, "mine")
    return {
        "chmod 600": lambda: os.chmod(path, 0o600),
        "chmod 400": lambda: os.chmod(path, 0o400),
        "umask 077": lambda: os.umask(0o077),
        "umask 177": lambda: os.umask(0o177) and os.umask(0o077),
    }


def run(install, private_files):
    shared = os.open(os.__file__, os.O_RDONLY)
    scratch = tempfile.TemporaryFile()
    fd = scratch.fileno()
    folder = tempfile.mkdtemp()
    refused = lambda: {**probes(shared, fd), **(private(folder) if private_files else {})}
    kept = lambda: {**allowed(shared, fd), **(private_allowed(folder) if private_files else {})}
    os.umask(0o077)
    before = {name: outcome(call) for name, call in refused().items()}
    os.umask(0o077)
    install(private_files=private_files)
    after = {name: outcome(call) for name, call in refused().items()}
    still = {name: outcome(call) for name, call in kept().items()}
    return {"before": before, "after": after, "allowed": still}
"""


def filtered_child(private_files: bool = False) -> dict:
    """``PROBES`` run in a forked child (the filter cannot be removed once installed)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            # the F_NOTIFY probe, let through before the filter, watches /tmp: any access
            # there by anyone would send SIGIO, whose default kills this child mid-report
            signal.signal(signal.SIGIO, signal.SIG_IGN)
            scope = {"NUMBERS": NUMBERS[platform.machine()]}
            exec(PROBES, scope)  # noqa: S102 - our own probe code
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(38, 1, 0, 0, 0)  # no_new_privs, as every student process has it
            result = scope["run"](seccomp.install, private_files)
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


@pytest.mark.parametrize("private_files", [False, True], ids=["every mode", "private files"])
def test_every_refused_call_is_refused_and_honest_calls_still_work(private_files):
    result = filtered_child(private_files)
    reached = {name for name, seen in result["before"].items() if seen != "EPERM"}
    expected = {"flock", "fcntl record lock", "inotify", "mincore", "preadv2 RWF_NOWAIT"}
    expected |= {"shmget", "TCP socket"} | ({"chmod 644", "umask 022"} if private_files else set())
    assert expected <= reached, (
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
    for machine, (audit, named) in seccomp.ARCHES.items():
        for name, nr in named.items():
            known = resolve(audit, name.encode())
            if known < 0 and name in NEWER_THAN_LIBSECCOMP:
                continue  # this libseccomp predates the call
            if known != nr:
                wrong[f"{machine} {name}"] = (nr, known)
    assert not wrong, f"(ours, libseccomp's) syscall numbers differ: {wrong}"


NEWER_THAN_LIBSECCOMP = {"cachestat", "fchmodat2", "setxattrat"}  # Linux 6.5, 6.6, 6.13


def test_an_unknown_machine_gets_no_filter_and_is_told_so():
    assert seccomp.program("sparc64") is None
    code = seccomp.program()
    assert code and len(code) % 8 == 0 and len(code) // 8 < 4096  # the kernel's BPF limit
