"""The state a call into the student's code must leave as it found it: the process's
global state and the files around it (``harness.invariants`` reads it before each call
and compares after).

``global_state()`` reads torch's, numpy's and Python's random states, grad and inference
mode, anomaly detection, the default dtype, deterministic algorithms, the thread count,
the float32 matmul precision, the torch function modes entered, pyplot's figures and
current figure, matplotlib's rcParams (against their values at import when the call
itself imported matplotlib), the working directory, the environment and the open files;
``state_changes`` says what differs and puts back what can be put back.
``watched_folders`` and ``written`` find a file written where the call was not told to
write.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import numpy as np
import torch

# ---- global state --------------------------------------------------------------------------


def _pyplot():
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None:
        return (), None
    gcf = helpers.Gcf
    active = gcf.get_active()
    content = None
    if active is not None:
        fig = active.canvas.figure
        content = (
            id(fig),
            [
                (
                    len(ax.lines),
                    len(ax.patches),
                    len(ax.collections),
                    len(ax.images),
                    len(ax.texts),
                    ax.get_title(),
                    ax.get_xlabel(),
                    ax.get_ylabel(),
                    ax.get_yscale(),
                )
                for ax in fig.axes
            ],
        )
    return tuple(gcf.figs), content


def _close_new_figures(was) -> None:
    """Close the figures a call left open (those it closed or drew on stay as they are)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is not None:
        for num in set(helpers.Gcf.figs) - set(was[0]):
            helpers.Gcf.destroy(num)


_RC_SKIPPED = {"backend", "backend_fallback"}  # matplotlib.use("Agg") in a headless run


def _rc_params(which: str = "rcParams"):
    """matplotlib's settings (``rcParamsOrig``: as its import read them), or None before
    matplotlib is imported."""
    rc = getattr(sys.modules.get("matplotlib"), which, None)
    if not isinstance(rc, dict):
        return None
    return {k: v for k, v in dict.items(rc) if k not in _RC_SKIPPED}


def _function_modes() -> int:
    """How many torch function modes are active (entered and not yet left). Dispatch modes
    are not counted: the checks read the state with them set aside."""
    return torch._C._len_torch_function_stack()


def _leave_function_modes(depth: int) -> None:
    """Leave the modes a call entered and did not leave, so later calls are not watched."""
    while torch._C._len_torch_function_stack() > depth:
        torch._C._pop_torch_function_stack()


# Inductor's first compile raises the recursion limit to 2000 for good: a call that was
# first to compile would be blamed for torch's change, so every process starts there.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 2000))


def _cudnn_flags() -> tuple:
    cudnn = torch.backends.cudnn
    return (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32)


def _set_cudnn_flags(flags: tuple) -> None:
    cudnn = torch.backends.cudnn
    cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32 = flags


_GLOBAL_HOOKS = (  # torch.nn.modules.module's tables of hooks that run for every module
    "_global_forward_pre_hooks",
    "_global_forward_hooks",
    "_global_backward_pre_hooks",
    "_global_backward_hooks",
    "_global_module_registration_hooks",
    "_global_parameter_registration_hooks",
    "_global_buffer_registration_hooks",
)


def global_module_hooks() -> tuple:
    from torch.nn.modules import module

    return tuple(tuple(getattr(module, name, None) or ()) for name in _GLOBAL_HOOKS)


def _remove_new_global_module_hooks(was: tuple) -> None:
    from torch.nn.modules import module

    for name, keys in zip(_GLOBAL_HOOKS, was):
        table = getattr(module, name, None) or {}
        for key in set(table) - set(keys):
            del table[key]


def _library_folders() -> tuple[str, ...]:
    """Where installed libraries live: what they open and keep (matplotlib's fonts, say) is
    theirs, whichever environment or ``.pth`` brought them onto ``sys.path``."""
    found = {sys.prefix, sys.base_prefix, "/usr/share"}
    found.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return tuple(f.rstrip("/") + "/" for f in sorted(found) if f)


_SYSTEM_FILES = ("/dev/", "/proc/", "/sys/", *_library_folders())


def _open_files():
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    found = {}
    for fd in fds:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if path.startswith("/") and not path.startswith(_SYSTEM_FILES):
            found[fd] = path
    return found


_LIBRARY_ENVIRONMENT = (b"TORCHINDUCTOR_", b"TRITON_")


def _environment():
    """The environment, less what torch sets for itself on first use of its compiler."""
    env = getattr(os.environ, "_data", None)
    if env is None:
        env = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    return {k: v for k, v in env.items() if not k.startswith(_LIBRARY_ENVIRONMENT)}


# name -> (read, put back or None, group a contract may allow)
STATE = {
    "torch's global random state": (
        torch.random.get_rng_state,
        torch.random.set_rng_state,
        "random",
    ),
    "numpy's global random state": (np.random.get_state, np.random.set_state, "random"),
    "Python's global random state": (random.getstate, random.setstate, "random"),
    "grad mode": (torch.is_grad_enabled, torch.set_grad_enabled, "grad_mode"),
    "inference mode": (torch.is_inference_mode_enabled, None, "grad_mode"),
    "anomaly detection": (torch.is_anomaly_enabled, torch.set_anomaly_enabled, "modes"),
    "the default dtype": (torch.get_default_dtype, torch.set_default_dtype, "modes"),
    "deterministic algorithms": (
        torch.are_deterministic_algorithms_enabled,
        torch.use_deterministic_algorithms,
        "modes",
    ),
    "torch's thread count": (torch.get_num_threads, torch.set_num_threads, "threads"),
    "float32 matmul precision": (
        torch.get_float32_matmul_precision,
        torch.set_float32_matmul_precision,
        "modes",
    ),
    "torch function modes": (_function_modes, _leave_function_modes, "mode_stack"),
    "cuDNN's flags": (_cudnn_flags, _set_cudnn_flags, "modes"),
    "global module hooks": (global_module_hooks, _remove_new_global_module_hooks, "hooks"),
    "Python's recursion limit": (sys.getrecursionlimit, sys.setrecursionlimit, "interpreter"),
    "the working directory": (os.getcwd, os.chdir, "cwd"),
    "the environment": (_environment, None, "environment"),
    "pyplot's figures": (_pyplot, _close_new_figures, "pyplot"),
    "matplotlib's rcParams": (_rc_params, None, "rc"),
    "open files": (_open_files, None, "files"),
}

WHY = {
    "random": "a call must neither seed nor draw from the global generators unless its contract "
    "says so: use a torch.Generator (or numpy Generator) of its own, or the one it is given",
    "grad_mode": "use `with torch.no_grad():` (or the decorator) so the mode is put back",
    "modes": "a library-wide setting changed inside a call changes every later computation: "
    "put it back before returning",
    "threads": "a library-wide setting changed inside a call changes every later computation",
    "mode_stack": "enter a mode with `with` (or try/finally) so it is left even when the "
    "code inside raises",
    "interpreter": "the interpreter's settings belong to the whole process: walk deep "
    "structures with an explicit stack instead of raising the recursion limit",
    "hooks": "a hook registered for every module (torch.nn.modules.module."
    "register_module_forward_hook and its kin) runs on every later model: remove it "
    "(handle.remove(), in a finally) before returning",
    "cwd": "use paths instead of changing directory",
    "environment": "the environment belongs to the whole process",
    "pyplot": "draw on a figure of your own (fig, ax = plt.subplots()), save it, "
    "plt.close(fig): pyplot's current figure belongs to the caller",
    "rc": "style one figure with `with plt.rc_context({...}):` or through its axes: "
    "matplotlib's settings belong to the whole process",
    "files": "close every file you open (`with open(...)`)",
}


def _equal_state(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        if not any(isinstance(x, torch.Tensor | np.ndarray) for x in a):
            return a == b  # Python's random state: 625 ints compared in one go
        return all(_equal_state(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def global_state() -> dict:
    return {name: read() for name, (read, _, _) in STATE.items()}


def _state_detail(name: str, before, after) -> str:
    if name == "pyplot's figures":
        (figs, content), (figs2, content2) = before or ((), None), after or ((), None)
        if set(figs2) - set(figs):
            return f"it left figure(s) {sorted(set(figs2) - set(figs))} open"
        if set(figs) - set(figs2):
            return f"it closed the caller's figure(s) {sorted(set(figs) - set(figs2))}"
        if content != content2:
            return "it drew into the caller's current figure"
        return "it changed which figure is current"
    if name == "torch function modes":
        names = []
        for i in range(before, after):
            try:
                names.append(type(torch._C._get_function_stack_at(i)).__name__)
            except Exception:  # noqa: BLE001 - the count alone still says it
                break
        device = "DeviceContext" in names  # torch.set_default_device enters one
        return (
            f"{after - before} entered and not left"
            + (f": {', '.join(names)}" if names else "")
            + (
                " — torch.set_default_device changes every later call's default device"
                if device
                else ""
            )
        )
    if name == "global module hooks":
        left = sum(len(set(a) - set(b)) for a, b in zip(after, before))
        gone = sum(len(set(b) - set(a)) for a, b in zip(after, before))
        return f"{left} registered and not removed" if left else f"{gone} of them removed"
    if name == "open files":
        new = sorted(set((after or {}).values()) - set((before or {}).values()))
        return f"it left {', '.join(new[:2]) or 'a file'} open"
    if name in ("matplotlib's rcParams", "the environment"):
        keys = sorted(
            k
            for k in set(before or {}) | set(after or {})
            if (before or {}).get(k) != (after or {}).get(k)
        )
        return f"{', '.join(map(str, keys[:3]))} changed"
    if isinstance(before, bool | int | float | str | torch.dtype | torch.device):
        return f"{before} -> {after}"
    return "it is not what it was"


def state_changes(before: dict, allowed: frozenset[str]) -> list[tuple[str, str, str]]:
    """``(name, detail, why)`` for each global state that differs from ``before``, put
    back where possible, except the groups ``allowed``."""
    found = []
    for name, (read, put_back, group) in STATE.items():
        if group in allowed:
            continue
        was, now = before[name], read()
        if was is None and name == "matplotlib's rcParams":
            was = _rc_params("rcParamsOrig")  # the call imported matplotlib itself
        if was is None:  # not there to look at before (matplotlib not imported yet)
            continue
        if name == "open files" and was is not None and now is not None:
            if not set(now.values()) - set(was.values()):
                continue
        elif _equal_state(was, now):
            continue
        found.append((name, _state_detail(name, was, now), WHY[group] if group in WHY else ""))
        if put_back is not None:
            try:
                put_back(was)
            except Exception:  # noqa: BLE001 - put back what can be
                pass
    return found


# ---- files ---------------------------------------------------------------------------------


def _listing(folder: str, stamps: bool = True) -> dict[str, tuple]:
    """``{name: stamp}`` of a folder's entries (dot-names aside): a file by inode, time
    and size, a folder by its inode alone (what others write inside it is not ours); with
    ``stamps=False`` the names alone."""
    found = {}
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.startswith("."):
                    continue
                if not stamps:
                    found[e.name] = ()
                    continue
                st = e.stat(follow_symlinks=False)
                found[e.name] = (
                    (st.st_ino,) if e.is_dir() else (st.st_ino, st.st_mtime_ns, st.st_size)
                )
    except OSError:
        pass
    return found


def watched_folders(paths: list[Path]) -> dict[str, dict]:
    """The working directory (its names) and the folder of each path the call was given
    (its entries' stamps); not a folder it was given itself: what it writes inside is its
    own business."""
    cwd = os.getcwd()
    folders = {cwd: _listing(cwd, stamps=False)}
    for p in paths:
        full = os.path.join(cwd, p)
        try:
            parent = os.path.dirname(full)
            if parent not in folders and not os.path.isdir(full) and os.path.isdir(parent):
                folders[parent] = _listing(parent)
        except (OSError, ValueError):  # text that only looks like a path
            pass
    return folders


# What libraries make in the working directory when it is the temporary folder (as in the
# grader's sandbox): multiprocessing's, the compiler's, matplotlib's and tempfile's own.
_LIBRARY_FILES = (
    "pymp-",
    "torchinductor_",
    "triton",
    "tmp",
    "matplotlib-",
    "torch_",
    "__pycache__",
)


def written(before: dict[str, dict], paths: list[Path]) -> tuple[Path, str] | None:
    """A file created in a watched folder, or changed beside a path given, other than a
    path given. In the working directory only new names count, and not the libraries'
    own: other programs (an editor, a loader's workers) may write there meanwhile."""
    cwd = os.getcwd()
    given = {os.path.join(cwd, p) for p in paths}
    for folder, was in before.items():
        mine = folder == cwd
        for name, stamp in _listing(folder, stamps=not mine).items():
            if was.get(name) == stamp or os.path.join(folder, name) in given:
                continue
            if not mine or (name not in was and not name.startswith(_LIBRARY_FILES)):
                return Path(folder), name
    return None
