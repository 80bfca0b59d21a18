"""The student's side of a split test run: answer probe calls, report nothing else.

The grader starts this in a process of its own beside the student's module (see
``grader/isolation/spawner.py``). It reads requests on one pipe and writes replies on
another, each a length-prefixed ``harness.wire`` frame:

    {"op": "import", "chapter": "ch02", "module": "autograd"}      -> {"ok": True}
    {"op": "call", "file": "exercises/ch02/test_autograd.py",
     "name": "reachable", "args": (...), "kwargs": {...}}          -> {"ok": True, "value": ...}
    {"op": "attr", "chapter": ..., "module": ..., "name": "f"}     -> {"ok": True, "value":
                                                     {"callable": True} or {"value": ...}}
    {"op": "attr_call", "chapter": ..., "module": ..., "name": "f",
     "args": (...), "kwargs": {...}}                               -> {"ok": True, "value": ...}

A failure is ``{"ok": False, "error": {type, base, message, where}}`` (see
``harness.probe.error_report``). The process holds no secret and decides nothing: what
it sends back is only data for the tests to judge, and whatever the student's code
does to this process can change only that data.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import sys
import types
from pathlib import Path

from harness import probe, target, wire


def read_exact(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_frame(fd: int, payload: bytes) -> None:
    data = memoryview(struct.pack(">Q", len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]


def read_frame(fd: int) -> bytes | None:
    head = read_exact(fd, 8)
    if head is None:
        return None
    return read_exact(fd, struct.unpack(">Q", head)[0])


class ProbeFiles:
    """The stripped test files under ``root``, imported on first use.

    Public test files are registered under their dotted names (``exercises.ch02.
    test_autograd``), so a hidden file's ``from exercises.ch02.test_autograd import x``
    finds this stripped copy and never a file elsewhere.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.loaded: dict[str, types.ModuleType] = {}

    def module(self, rel: str) -> types.ModuleType:
        if rel in self.loaded:
            return self.loaded[rel]
        path = self.root / rel
        if ".." in Path(rel).parts or not path.is_file():
            raise FileNotFoundError(f"no probe file {rel!r} here")
        dotted = rel.removesuffix(".py").replace("/", ".")
        parts = dotted.split(".")
        for k in range(1, len(parts)):  # namespace parents, pointing here only
            name = ".".join(parts[:k])
            here = [str(self.root.joinpath(*parts[:k]))]
            if getattr(sys.modules.get(name), "__path__", None) != here:
                pkg = types.ModuleType(name)
                pkg.__path__ = here
                sys.modules[name] = pkg
        spec = importlib.util.spec_from_file_location(dotted, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[dotted] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            # a half-run file must not stay registered: the watch would take it for the
            # tests' module, and the retry on first use for a replacement of it
            del sys.modules[dotted]
            raise
        self.loaded[rel] = mod
        return mod

    def preload(self) -> None:
        """Public files first: hidden files import from them. A file that fails here is
        tried again (and its error reported) when a probe of it is called."""
        files = sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("test_*.py"))
        for rel in sorted(files, key=lambda r: r.startswith("grader/")):
            try:
                self.module(rel)
            except Exception:  # noqa: BLE001 - reported on use, where a test can say so
                pass


def handle(request, files: ProbeFiles, impl: Path):
    op = request.get("op") if isinstance(request, dict) else None
    if op == "import":
        target.load(str(request["chapter"]), str(request["module"]))
        return None
    args, kwargs = request.get("args", ()), request.get("kwargs", {})
    if op == "call":
        fn = getattr(files.module(str(request["file"])), str(request["name"]))
        if not isinstance(fn, probe.Probe):
            raise TypeError(f"{request['name']} is not a probe")
        return fn.fn(*args, **kwargs)
    if op in ("attr", "attr_call"):
        mod = target.chapter_module(str(request["chapter"]), str(request["module"]))
        value = getattr(mod, str(request["name"]))
        if op == "attr_call":
            return value(*args, **kwargs)
        return {"callable": True} if callable(value) else {"value": value}
    raise ValueError(f"unknown request {op!r}")


def _label(request) -> str:
    if not isinstance(request, dict):
        return "a request"
    if request.get("op") == "import":
        return f"importing {request.get('chapter')}/{request.get('module')}.py"
    return f"{request.get('op')} {request.get('name')}"


def serve(rfd: int, wfd: int, root: Path, impl: Path) -> None:
    """Answer requests until the other side closes the pipe, then exit."""
    target.set_root(impl)
    side = probe.StudentSide()
    probe.use(side)
    files = ProbeFiles(root)
    files.preload()  # every probe's instruments are bound before the student's module runs
    side.watch.start()
    # Bound here, before the student's module is imported: replacing these names later
    # cannot rewrite the replies (the watch reports such a replacement as tampering).
    read, write, encode, decode = read_frame, write_frame, wire.encode, wire.decode
    report_of, not_plain, limit = probe.error_report, wire.NotPlainData, probe.MESSAGE_LIMIT
    while True:
        frame = read(rfd)
        if frame is None:
            break
        try:
            request = decode(frame)
            label = _label(request)
            value = side.answer(
                label,
                lambda request=request: handle(request, files, impl),
                importing=isinstance(request, dict) and request.get("op") == "import",
            )
            reply = encode({"ok": True, "value": value})
        except BaseException as exc:  # noqa: BLE001 - student code may raise anything
            report = report_of(exc, impl)
            if isinstance(exc, not_plain):
                report["message"] = f"the tests cannot read what your code returned: {exc}"[:limit]
            reply = encode({"ok": False, "error": report})
        write(wfd, reply)
    sys.stdout.flush()
    os._exit(0)
