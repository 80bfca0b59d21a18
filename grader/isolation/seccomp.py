"""A seccomp filter for student processes: refuse the system calls that reach kernel
state shared beyond the process — state that outlives it or that another sandbox can
see — which no list of paths can name, and allow everything else.

Refused (``EPERM``), by class, in every mode:

- **keyrings** (``add_key``, ``request_key``, ``keyctl``): the per-uid user keyring is
  not separated by any namespace the grader uses and outlives every process of the uid;
- **file locks** (``flock``, and ``fcntl``'s record-lock commands): a lock on a file
  every sandbox can read (Python's own files, mounted read-only) is visible to all of
  them, a channel that needs no write access;
- **file watches** (``inotify_*``, ``fanotify_*``, and ``fcntl``'s ``F_NOTIFY``): a watch
  is kept on the file itself, not on a mount, so one sandbox sees every time another,
  running at the same time, opens or reads a file both can read;
- **page-cache queries** (``mincore``, ``cachestat``, ``preadv2``/``pwritev2`` with
  ``RWF_NOWAIT``, and ``io_uring``, which can issue such reads): they tell which pages of
  a file are cached, and a sandbox running at the same time decides that by reading
  (or dropping) pages of a file both can read. Reading and timing a read stays possible:
  a noisier channel that no filter closes;
- **System V and POSIX IPC** (``shmget``, ``msgget``, ``semget``, ``mq_open``): named by
  keys and names, not paths, and shared by every process outside an IPC namespace;
- **network sockets** (``socket`` of the IPv4, IPv6 and packet families): no student
  process reaches a network, loopback included (Landlock's TCP rules say the same
  where the kernel has them; this covers UDP and raw sockets too).

Where a student process shares folders with other users (the ``uid`` mode's
``/dev/shm``), ``private_files`` also refuses what would open its files to them: a
``chmod`` family call or ``umask`` that grants group or other users any access, and
extended attributes (POSIX ACLs). Files it makes are then its own uid's alone.

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
BPF_LD_W_ABS, BPF_ALU_AND_K, BPF_RET_K = 0x20, 0x54, 0x06
BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K = 0x15, 0x35, 0x45
X32_SYSCALL_BIT = 0x40000000
RWF_NOWAIT = 0x8  # preadv2/pwritev2 flag: fail rather than wait for a page not cached
# F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK/SETLK/SETLKW, and F_NOTIFY (directory watches)
FCNTL_REFUSED = (5, 6, 7, 36, 37, 38, 1026)
SOCKET_FAMILIES_REFUSED = (2, 10, 17)  # AF_INET, AF_INET6, AF_PACKET
OTHERS = 0o077  # permission bits of group and other users

REFUSED = (
    "add_key", "request_key", "keyctl", "flock", "inotify_init", "inotify_add_watch",
    "inotify_init1", "fanotify_init", "fanotify_mark", "mincore", "io_uring_setup",
    "cachestat", "shmget", "msgget", "semget", "mq_open",
)  # fmt: skip
XATTR_WRITES = ("setxattr", "lsetxattr", "fsetxattr", "setxattrat")
# chmod family: the argument that holds the mode
CHMODS = {"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2}

# arch -> (AUDIT_ARCH value, syscall numbers by name). A name missing on an architecture
# (aarch64 has no chmod or inotify_init) has no call to refuse there.
# tests/test_seccomp.py checks the numbers against libseccomp's tables.
ARCHES = {
    "x86_64": (
        0xC000003E,
        {"add_key": 248, "request_key": 249, "keyctl": 250, "flock": 73, "inotify_init": 253,
         "inotify_add_watch": 254, "inotify_init1": 294, "fanotify_init": 300,
         "fanotify_mark": 301, "mincore": 27, "io_uring_setup": 425, "cachestat": 451,
         "shmget": 29, "msgget": 68, "semget": 64, "mq_open": 240, "fcntl": 72,
         "preadv2": 327, "pwritev2": 328, "socket": 41, "chmod": 90, "fchmod": 91,
         "fchmodat": 268, "fchmodat2": 452, "umask": 95, "setxattr": 188, "lsetxattr": 189,
         "fsetxattr": 190, "setxattrat": 463},
    ),
    "aarch64": (
        0xC00000B7,
        {"add_key": 217, "request_key": 218, "keyctl": 219, "flock": 32, "inotify_init1": 26,
         "inotify_add_watch": 27, "fanotify_init": 262, "fanotify_mark": 263, "mincore": 232,
         "io_uring_setup": 425, "cachestat": 451, "shmget": 194, "msgget": 186, "semget": 190,
         "mq_open": 180, "fcntl": 25, "preadv2": 286, "pwritev2": 287, "socket": 198,
         "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "umask": 166, "setxattr": 5,
         "lsetxattr": 6, "fsetxattr": 7, "setxattrat": 463},
    ),
}  # fmt: skip


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def _arg(i: int) -> tuple:
    """Load the low half of argument ``i`` (seccomp_data.args[i], little-endian)."""
    return (BPF_LD_W_ABS, 0, 0, 16 + 8 * i)


def _one_of(nr: int, arg: int, values: tuple[int, ...]) -> list:
    """Refuse call ``nr`` when its argument ``arg`` is one of ``values``."""
    body = [(BPF_JEQ_K, 0, 2 + 2 * len(values), nr), _arg(arg)]
    for value in values:
        body += [(BPF_JEQ_K, 0, 1, value), ("deny",)]
    return body + [("allow",)]


def _any_bit(nr: int, arg: int, bits: int) -> list:
    """Refuse call ``nr`` when its argument ``arg`` has any of ``bits``."""
    return [(BPF_JEQ_K, 0, 4, nr), _arg(arg), (BPF_JSET_K, 0, 1, bits), ("deny",), ("allow",)]


def program(machine: str | None = None, private_files: bool = False) -> bytes | None:
    """The filter as bytes of ``struct sock_filter``, or None on an unknown machine."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, nrs = arch
    body = [
        # other ABIs (compat, x32): refused whole
        (BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (BPF_JEQ_K, 1, 0, audit),
        ("deny",),
        (BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (BPF_JGE_K, 0, 1, X32_SYSCALL_BIT),
        ("deny",),
    ]
    refused = REFUSED + (XATTR_WRITES if private_files else ())
    for nr in sorted(nrs[name] for name in refused if name in nrs):
        body += [(BPF_JEQ_K, 0, 1, nr), ("deny",)]
    # the rest are decided by an argument (each block ends in allow or deny, so the
    # syscall number only needs loading once, here)
    for name in ("preadv2", "pwritev2"):
        body += _any_bit(nrs[name], 5, RWF_NOWAIT)
    body += _one_of(nrs["socket"], 0, SOCKET_FAMILIES_REFUSED)
    body += _one_of(nrs["fcntl"], 1, FCNTL_REFUSED)
    if private_files:
        for name, arg in CHMODS.items():
            if name in nrs:
                body += _any_bit(nrs[name], arg, OTHERS)
        body += [
            (BPF_JEQ_K, 0, 5, nrs["umask"]),
            _arg(0),
            (BPF_ALU_AND_K, 0, 0, OTHERS),
            (BPF_JEQ_K, 1, 0, OTHERS),  # a mask that still keeps others out
            ("deny",),
            ("allow",),
        ]
    body += [("allow",)]
    deny = SECCOMP_RET_ERRNO | errno.EPERM
    ends = {("deny",): (BPF_RET_K, 0, 0, deny), ("allow",): (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)}
    return b"".join(_insn(*ends.get(insn, insn)) for insn in body)


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(private_files: bool = False) -> bool:
    """Install the filter on this thread (and every thread and process it creates
    later). Needs ``no_new_privs`` (set by the caller) unless running as root. False
    where this machine has no filter here; raises OSError if the kernel refuses it."""
    code = program(private_files=private_files)
    if code is None:
        return False
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Prog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter refused: {errno.errorcode.get(err, err)}")
    return True
