"""The sandbox of one student process, declared once.

A ``Confinement`` says what the process may read, what it may write, which devices it
may use, whether it reaches a network, whether it gets namespaces of its own, whose user
it runs as and under which limits. Paths are named as the process sees them. Each
backend applies the same declaration: ``namespaces`` builds a root that holds only what
may be read (``binds``) and private folders for what may be written; ``landlock`` hands
the lists to the kernel as rules, so everything not listed is denied; ``uids`` gives the
process a user no other live sandbox holds; ``seccomp`` refuses the calls that reach
state no list can name. ``python -m grader doctor`` prints it (``describe``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# What a process outside a root of its own reads of the host besides its packages: the
# loader's cache, the time zone, and what torch's cpuinfo reads to learn the CPU (it
# fails on a refusal: a float16 matmul raises "Failed to initialize cpuinfo!").
HOST_FILES = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/proc/cpuinfo",
    "/sys/devices/system/cpu",
)
SHARED_MEMORY = "/dev/shm"  # where glibc puts POSIX semaphores and shared memory


@dataclass(frozen=True)
class ProcessLimits:
    memory_mb: int = 4096  # address space
    nproc: int = 64  # processes and threads of its user
    fsize_mb: int = 256  # largest file it may write
    nofile: int = 1024  # open files
    tmp_mb: int = 256  # its private /tmp, where it has one (memory)
    shm_mb: int = 256  # its private /dev/shm, where it has one (memory)
    threads: int = 1  # torch / OpenMP threads


@dataclass(frozen=True)
class Confinement:
    """What one student process may see and do (see the module doc)."""

    mode: str
    read: tuple[str, ...]  # it may read (and execute) beneath each of these, nothing else
    write: tuple[str, ...]  # it may create, change and remove beneath these: its own scratch
    devices: tuple[str, ...]  # device files it may read and write
    shared_memory: str | None  # a folder all processes share where it may keep files of its own
    binds: tuple[tuple[str, str], ...]  # namespaces: host path -> the same data in its root
    namespaces: bool  # its own mount, PID, network, IPC and UTS namespaces
    own_uid: bool  # a uid no other live sandbox holds (else: the grader's own user)
    private_files: bool  # the files it makes can never be opened to another user
    network: bool = False  # False: no TCP, UDP or raw socket reaches anything
    landlock_abi: int = 0  # the Landlock ABI that enforces read/write/devices (0: none)
    limits: ProcessLimits = ProcessLimits()

    def describe(self) -> list[str]:
        """The declaration, a line per kind, for ``doctor``."""
        lines = [
            f"may read: {', '.join(self.read)}",
            f"may write: {', '.join(self.write)} (its own, removed when it ends)",
            f"devices: {', '.join(self.devices)}",
        ]
        if self.shared_memory:
            lines.append(
                f"shared memory: its own files in {self.shared_memory} (multiprocessing's "
                "semaphores)" + (", never readable by another user" if self.private_files else "")
            )
        lines.append("network: none" if not self.network else "network: allowed")
        lines.append(
            f"enforced by Landlock (ABI {self.landlock_abi}) as well"
            if self.landlock_abi
            else "Landlock: none (the lists above are kept only by what the mode builds)"
        )
        lines.append(
            "namespaces: mount, PID, network, IPC, UTS of its own"
            if self.namespaces
            else "namespaces: none (the host's)"
        )
        lines.append(
            "user: a uid no other live sandbox holds" if self.own_uid else "user: the grader's own"
        )
        lim = self.limits
        lines.append(
            f"limits: {lim.memory_mb} MiB address space, {lim.nproc} processes, files up to "
            f"{lim.fsize_mb} MiB, {lim.nofile} open files, {lim.threads} thread(s)"
        )
        return lines


def host_paths(repo: Path | None = None, private: tuple[Path, ...] = ()) -> list[Path]:
    """What a student process needs from the host besides its own folder: the system,
    the Python installation and every folder on ``sys.path`` that holds installed
    packages (a ``.pth`` may point outside the environment). Never the repository (a
    virtual environment inside it brings only itself) and never a folder that holds the
    repository or the grader's sandboxes (``private``)."""
    from harness.target import REPO

    repo = Path(repo or REPO).resolve()
    prefixes = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
    wanted = [Path(p) for p in SYSTEM] + prefixes
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if not path.is_dir() or any(path.is_relative_to(p) for p in prefixes):
            continue
        if path.is_relative_to(repo) or repo.is_relative_to(path):
            continue  # the repository holds the solutions and the hidden tests
        wanted.append(path)
    found: list[Path] = []
    for p in sorted({w for w in wanted if w.exists()}, key=lambda q: len(q.parts)):
        if any(q.is_relative_to(p) for q in private) or p == Path("/"):
            continue
        if not any(p.is_relative_to(f) for f in found if not f.is_symlink()):
            found.append(p)
    return found


def gpu_devices() -> tuple[str, ...]:
    return tuple(str(p) for p in sorted(Path("/dev").glob("nvidia*")) if p.is_char_device())


def declare(mode: str, folder: Path, work: Path, settings: dict) -> Confinement:
    """The sandbox of a student process in ``mode`` over its chapter ``folder`` (its
    module, the probes, the data), writing only in ``work`` (see ``modes``)."""
    from grader.isolation.modes import landlock_abi

    limits = ProcessLimits(
        **{k: settings[k] for k in ProcessLimits.__dataclass_fields__ if k in settings}
    )
    abi = landlock_abi()
    gpus = gpu_devices()
    # CUDA finds its devices through /proc/driver and /sys (read only)
    gpu_reads = ("/sys", "/proc/driver/nvidia") if gpus else ()
    hosts = host_paths(settings.get("repo"), (folder.resolve(), work.resolve()))
    if mode in ("namespace", "userns"):
        binds = tuple((str(h), str(h)) for h in hosts)
        return Confinement(
            mode=mode,
            read=(*(inside for _, inside in binds), "/etc", "/proc", "/sandbox"),
            write=("/tmp", SHARED_MEMORY),
            devices=DEVICES + gpus,
            shared_memory=None,
            binds=binds + ((str(folder), "/sandbox"),),
            namespaces=True,
            own_uid=mode == "namespace",
            private_files=False,  # nobody else can see its folders
            landlock_abi=abi,
            limits=limits,
        )
    host_files = tuple(p for p in HOST_FILES if os.path.exists(p))
    return Confinement(
        mode=mode,
        read=(*map(str, hosts), *host_files, *gpu_reads, str(folder)),
        write=(str(work),),
        devices=DEVICES + gpus,
        shared_memory=SHARED_MEMORY if os.path.isdir(SHARED_MEMORY) else None,
        binds=(),
        namespaces=False,
        own_uid=mode == "uid",
        private_files=mode == "uid",
        landlock_abi=abi,
        limits=limits,
    )
