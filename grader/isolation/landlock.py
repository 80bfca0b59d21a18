"""The declaration as Landlock rules: the kernel denies a student process every file
access not granted here, whoever owns the file and wherever it is, and (by ABI) every
TCP bind or connect, and every signal or abstract Unix socket leaving its sandbox.

Through ``landlockpy`` (0BSD, no dependencies), in best-effort mode: rights this kernel's
ABI does not know are left out, and ``restrict`` returns the ABI it used (0 when the
kernel has no Landlock or the binding is not installed, so nothing was restricted).
"""

from __future__ import annotations

import os

from grader.isolation.declaration import Confinement


def restrict(conf: Confinement) -> int:
    """Restrict this process and every process it creates to ``conf`` (irreversible),
    where the declaration says Landlock enforces it."""
    abi = conf.landlock_abi
    if not abi:
        return 0
    from landlockpy import AccessFS, AccessNet, Ruleset, Scope

    dir_only = (
        AccessFS.READ_DIR
        | AccessFS.REMOVE_DIR
        | AccessFS.REMOVE_FILE
        | AccessFS.MAKE_CHAR
        | AccessFS.MAKE_DIR
        | AccessFS.MAKE_REG
        | AccessFS.MAKE_SOCK
        | AccessFS.MAKE_FIFO
        | AccessFS.MAKE_BLOCK
        | AccessFS.MAKE_SYM
        | AccessFS.REFER
    )
    read = AccessFS.READ_FILE | AccessFS.READ_DIR | AccessFS.EXECUTE
    write = ~(AccessFS.MAKE_CHAR | AccessFS.MAKE_BLOCK)  # all else, devices aside
    # in a shared folder: create, use and remove files, never list or make folders
    shared = (
        AccessFS.READ_FILE
        | AccessFS.WRITE_FILE
        | AccessFS.MAKE_REG
        | AccessFS.REMOVE_FILE
        | AccessFS.TRUNCATE
    )
    device = AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.IOCTL_DEV | AccessFS.TRUNCATE
    with Ruleset(
        handled_net=AccessNet.BIND_TCP | AccessNet.CONNECT_TCP,  # no port is granted
        scoped=Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL,
    ) as rules:
        for paths, rights in (
            (conf.read, read),
            (conf.write, write),
            (conf.devices, device),
            ((conf.shared_memory,) if conf.shared_memory else (), shared),
        ):
            for path in paths:
                if not os.path.exists(path):
                    continue
                granted = AccessFS(rights & rules.handled_fs)
                if not os.path.isdir(path):
                    granted &= ~dir_only
                rules.allow_path(path, granted)
        rules.restrict()  # sets no_new_privs first
    return abi
