"""Namespaces of its own for a student process: the ``namespace`` mode (root) and the
``userns`` mode (a normal user, through an unprivileged user namespace that maps only
that user).

The process gets new mount, PID, network, IPC and UTS namespaces and a root built from
its ``Confinement``: a tmpfs holding the declared ``binds`` read-only, private ``/tmp``
and ``/dev/shm`` of bounded size, the declared devices, its own ``/proc``, and a few
files of ``/etc``. What is not bound is not there: the repository, ``solutions/``, the
submissions, other sandboxes and the grader's home do not exist in that root.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
from pathlib import Path

from grader.isolation.declaration import Confinement

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21
# statvfs's ST_* flags of a mount -> the MS_* flags that keep them on a remount: in a user
# namespace a bind mount's inherited flags are locked, and a remount that drops one fails
KEPT_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}
CAPSET = {"x86_64": 126, "aarch64": 91}  # the capset system call's number

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None):
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(
        _libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {dst}",
    )


def enter(unprivileged: bool) -> None:
    """New mount, PID, network, IPC and UTS namespaces for this (single-threaded) process;
    with ``unprivileged``, inside a new user namespace where only this user is mapped (to
    itself). Children forked afterwards are in the new PID namespace."""
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    _check(_libc.unshare(flags | (CLONE_NEWUSER if unprivileged else 0)), "unshare")
    if unprivileged:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def mount_private_tmpfs(path: str, size_mb: int, mode: int = 0o1777) -> None:
    _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,mode={mode:o}")


def mount_proc(path: str) -> None:
    """This PID namespace's own /proc (called as its PID 1 or a descendant)."""
    _mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _bind_read_only(host: str, inside: Path) -> None:
    if Path(host).is_dir():
        inside.mkdir(parents=True, exist_ok=True)
    else:
        inside.parent.mkdir(parents=True, exist_ok=True)
        inside.touch()
    _mount(host, str(inside), None, MS_BIND | MS_REC)
    kept = os.statvfs(host).f_flag
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    flags |= sum(ms for st, ms in KEPT_FLAGS.items() if kept & st)
    _mount(None, str(inside), None, flags)


def build_root(newroot: Path, conf: Confinement, uid: int) -> None:
    """The student's root at ``newroot`` (in the new mount namespace), from ``conf``.

    The private ``/tmp`` and ``/dev/shm`` come first: a Python installation or a clone
    of the course may itself live under ``/tmp``, and its bind mount must land inside
    the private ``/tmp`` (read-only), not be hidden by it or collide with it.
    """
    newroot.mkdir(parents=True, exist_ok=True)
    _mount("tmpfs", str(newroot), "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=755")
    (newroot / "tmp").mkdir()
    mount_private_tmpfs(str(newroot / "tmp"), conf.limits.tmp_mb)
    dev = newroot / "dev"
    dev.mkdir()
    _mount("tmpfs", str(dev), "tmpfs", MS_NOSUID, "size=64k,mode=755")
    for device in conf.devices:
        (dev / Path(device).name).touch()
        _mount(device, str(dev / Path(device).name), None, MS_BIND)
    (dev / "fd").symlink_to("/proc/self/fd")
    (dev / "shm").mkdir()
    mount_private_tmpfs(str(dev / "shm"), conf.limits.shm_mb)
    for host, inside in conf.binds:
        target = newroot / inside.lstrip("/")
        if Path(host).is_symlink() and str(Path(host).parent) == "/":
            target.symlink_to(os.readlink(host))  # /lib -> usr/lib: keep the link
            continue
        _bind_read_only(host, target)
    etc = newroot / "etc"
    etc.mkdir(exist_ok=True)
    for name in ("ld.so.cache", "localtime"):
        if Path("/etc", name).exists():
            shutil.copyfile(Path("/etc", name), etc / name, follow_symlinks=True)
    (etc / "passwd").write_text(
        f"root:x:0:0::/:/bin/false\nstudent:x:{uid}:{uid}::/tmp:/bin/false\n"
    )
    (etc / "group").write_text(f"root:x:0:\nstudent:x:{uid}:\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    (newroot / "proc").mkdir()
    _mount(None, str(newroot), None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def enter_root(newroot: Path) -> None:
    """As PID 1 of the new PID namespace: its own /proc, then the root and /tmp."""
    mount_proc(str(newroot / "proc"))
    os.chroot(newroot)
    os.chdir("/tmp")


def drop_capabilities() -> None:
    """No capability left, in any set (a user namespace gives its creator all of them
    there, whatever its uid): the student's code cannot change its mounts or its root."""
    number = CAPSET.get(platform.machine())
    if number is None:
        raise OSError(f"no capset number known for {platform.machine()}")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice 32 bits, all 0
    _check(_libc.syscall(number, header, data), "capset")
