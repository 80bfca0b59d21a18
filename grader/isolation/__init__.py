"""How a student process is confined: one declaration, applied by the kernel.

``declaration``  what a student process may read, write and reach, its user and limits
``modes``        which way this machine can enforce it (namespace, userns, uid, landlock, none)
``namespaces``   a root and namespaces of its own (as root, or through a user namespace)
``landlock``     the same lists as Landlock rules: everything else denied by the kernel
``uids``         sandbox uids as root, and ending every process of one
``seccomp``      the system calls no list of paths can name, refused
``spawner``      the server that starts student processes, confined, for the trusted side

Only ``declaration`` and ``modes`` are imported here: they are plain Python, so the
grader's student path (``grader check``) imports on every platform; the rest is Linux's
and loads when a student process is started.
"""

from grader.isolation.declaration import Confinement, ProcessLimits, declare, host_paths
from grader.isolation.modes import (
    DESCRIPTION,
    FAULT_ENV,
    MODES,
    SETTINGS_ENV,
    confines,
    gaps,
    landlock_abi,
    mode,
)

__all__ = [
    "DESCRIPTION",
    "FAULT_ENV",
    "MODES",
    "SETTINGS_ENV",
    "Confinement",
    "ProcessLimits",
    "confines",
    "declare",
    "gaps",
    "host_paths",
    "landlock_abi",
    "mode",
]
