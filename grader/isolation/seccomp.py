"""A seccomp filter for student processes: refuse the system calls that reach kernel
state shared beyond the process — state that outlives it or that another sandbox can
see — and allow everything else.

Refused (``EPERM``), by class:

- **keyrings** (``add_key``, ``request_key``, ``keyctl``): the per-uid user keyring is
  not separated by any namespace the grader uses and outlives every process of the uid;
- **file locks** (``flock``, and ``fcntl``'s record-lock commands): a lock on a file
  every sandbox can read (Python's own files, mounted read-only) is visible to all of
  them, a channel that needs no write access;
- **file watches** (``inotify_*``, ``fanotify_*``, and ``fcntl``'s ``F_NOTIFY``): a watch
  is kept on the file itself, not on a mount, so one sandbox sees every time another,
  running at the same time, opens or reads a file both can read.
- **page-cache queries** (``mincore``, ``cachestat``, ``preadv2``/``pwritev2`` with
  ``RWF_NOWAIT``, and ``io_uring``, which can issue such reads): they tell which pages of
  a file are cached, and a sandbox running at the same time decides that by reading
  (or dropping) pages of a file both can read. Reading and timing a read stays possible:
  a noisier channel that no filter closes.

Every call of another architecture's ABI (32-bit ``int 0x80``, x32) is refused too, so
the numbers above cannot be reached under other names. Written as classic BPF through
``prctl`` (no library needed); on an architecture not listed here no filter is
installed and ``install`` says so. libseccomp would build the same program, but its
Python bindings are not on PyPI and the C library is not on every machine a grader
runs on; where it is installed, the tests check our syscall numbers against its tables.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
X32_SYSCALL_BIT = 0x40000000
RWF_NOWAIT = 0x8  # preadv2/pwritev2 flag: fail rather than wait for a page not cached
# F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK/SETLK/SETLKW, and F_NOTIFY (directory watches)
FCNTL_REFUSED = (5, 6, 7, 36, 37, 38, 1026)

# arch -> (AUDIT_ARCH value, refused syscall numbers, fcntl's number, the numbers of
# preadv2 and pwritev2). tests/test_seccomp.py checks them against libseccomp's tables.
ARCHES = {
    "x86_64": (
        0xC000003E,
        {"add_key": 248, "request_key": 249, "keyctl": 250, "flock": 73, "inotify_init": 253,
         "inotify_add_watch": 254, "inotify_init1": 294, "fanotify_init": 300,
         "fanotify_mark": 301, "mincore": 27, "io_uring_setup": 425, "cachestat": 451},
        72,
        (327, 328),
    ),
    "aarch64": (
        0xC00000B7,
        {"add_key": 217, "request_key": 218, "keyctl": 219, "flock": 32, "inotify_init1": 26,
         "inotify_add_watch": 27, "fanotify_init": 262, "fanotify_mark": 263, "mincore": 232,
         "io_uring_setup": 425, "cachestat": 451},
        25,
        (286, 287),
    ),
}  # fmt: skip


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter as bytes of ``struct sock_filter``, or None on an unknown machine."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, calls, fcntl_nr, nowait_calls = arch
    deny = SECCOMP_RET_ERRNO | errno.EPERM
    body = [
        # other ABIs (compat, x32): refused whole
        (BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (BPF_JEQ_K, 1, 0, audit),
        ("deny",),
        (BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (BPF_JGE_K, 0, 1, X32_SYSCALL_BIT),
        ("deny",),
    ]
    for nr in sorted(calls.values()):
        body += [(BPF_JEQ_K, 0, 1, nr), ("deny",)]
    for nr in nowait_calls:  # decided by their flags alone: refused or allowed here
        body += [
            (BPF_JEQ_K, 0, 4, nr),
            (BPF_LD_W_ABS, 0, 0, 56),  # low half of args[5]: the flags
            (BPF_JSET_K, 0, 1, RWF_NOWAIT),
            ("deny",),
            ("allow",),
        ]
    body += [(BPF_JEQ_K, 0, 1 + 2 * len(FCNTL_REFUSED), fcntl_nr)]
    body += [(BPF_LD_W_ABS, 0, 0, 24)]  # low half of args[1]: fcntl's command
    for cmd in FCNTL_REFUSED:
        body += [(BPF_JEQ_K, 0, 1, cmd), ("deny",)]
    body += [("allow",)]
    ends = {("deny",): (BPF_RET_K, 0, 0, deny), ("allow",): (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)}
    return b"".join(_insn(*ends.get(insn, insn)) for insn in body)


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> bool:
    """Install the filter on this thread (and every thread and process it creates
    later). Needs ``no_new_privs`` (set by the caller) unless running as root. False
    where this machine has no filter here; raises OSError if the kernel refuses it."""
    code = program()
    if code is None:
        return False
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Prog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter refused: {errno.errorcode.get(err, err)}")
    return True
