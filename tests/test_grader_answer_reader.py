"""The answer reader: a submission that computes nothing and answers from whatever its
process can see gets no more than the stub, in every chapter.

Each chapter's stub is graded, through the split grader, with an overlay that

- at import and in every call reads every file under its sandbox folder (the stripped
  test files, the harness, the chapter's data) and every global of the test modules
  already imported there, and keeps every constant and every row of every table;
- in every call walks its callers' frames and keeps their locals (except its own
  arguments), and puts a line tracer on the calling probe that records its locals at
  every line it runs after the call;
- answers from what it found, by the function's return annotation: first a row of a
  table that holds one of its arguments (``(losses, "converging", why)`` answers
  ``classify_curve(losses)``), then the nearest caller's local whose name sounds like an
  answer (``expected``, ``want``, ``kind``, ...) and fits the return type; for a yes/no
  question a string there answers whether it names what the function's name asks
  (``kind == "views"`` answers ``is_view_of``); when nothing fits it behaves exactly as
  the stub.

A stub scores 0 in every chapter (``tests/test_chapters.py``), so the reader must score 0.
Every chapter's module is graded in one submission, through the split grader, as a
student hands them in.
"""

from __future__ import annotations

import importlib.util

import pytest

from grader import isolation, run, sandbox, score
from harness import index
from harness.target import REPO

# A hang guard: ~1 min alone, a few times that beside other test files (nox -s tests
# runs two at once), more on a busy machine.
pytestmark = [
    pytest.mark.timeout(2700),
    pytest.mark.skipif(
        not isolation.confines(isolation.mode()),
        reason=f"student code is not confined here (the {isolation.mode()!r} mode: "
        "grader/README.md), so it may read the course's clone",
    ),
]

CHAPTERS = list(index.chapters().values())

OVERLAY = r"""

# ---- answer reader (tests/test_grader_answer_reader.py) ----
import ast as _ar_ast
import functools as _ar_ft
import inspect as _ar_inspect
import os as _ar_os
import re as _ar_re
import sys as _ar_sys
from pathlib import Path as _ArPath

import torch as _ar_torch

_AR_HOME = _ArPath(__file__).resolve().parents[2]  # the sandbox folder of this phase
_AR_CONSTANTS = []  # every constant of every readable file
_AR_ROWS = []  # every tuple or list found in a file's tables or a test module's globals
_AR_TRACED = []  # locals seen by the line tracer in the probe files
_AR_READ = {}
_AR_PUBLIC = tuple({_ar_sys.prefix, _ar_sys.base_prefix, _ar_sys.exec_prefix})
_AR_ANSWER_NAMES = ("expected", "want", "answer", "kind", "verdict", "label", "truth", "target")
_AR_PLAIN = (bool, int, float, str, tuple, list, dict, _ar_torch.Tensor)


def _ar_read_files():
    count = 0
    for folder in (_AR_HOME, _ArPath("/tmp")):
        for dirpath, dirs, names in _ar_os.walk(folder):
            if dirpath.startswith(_AR_PUBLIC) or "site-packages" in dirpath:
                dirs[:] = []  # the Python installation (under /tmp in a clone there): no answers
                continue
            for name in names:
                path = _ArPath(dirpath) / name
                count += 1
                if count > 3000:
                    return
                if path in _AR_READ:
                    continue
                try:
                    data = path.read_bytes()[:2_000_000]
                except OSError:
                    continue
                _AR_READ[path] = len(data)
                if name.endswith(".py"):
                    try:
                        tree = _ar_ast.parse(data)
                    except (SyntaxError, ValueError):
                        continue
                    for node in _ar_ast.walk(tree):
                        if isinstance(node, _ar_ast.Constant):
                            _AR_CONSTANTS.append(node.value)
                        elif isinstance(node, _ar_ast.Tuple | _ar_ast.List):
                            try:
                                _AR_ROWS.append(_ar_ast.literal_eval(node))
                            except (ValueError, TypeError, SyntaxError, MemoryError):
                                pass


def _ar_flatten(value, out, depth=0):
    if depth > 3 or len(out) > 20000:
        return
    if isinstance(value, dict):
        for k, v in list(value.items())[:2000]:
            _ar_flatten(v, out, depth + 1)
    elif isinstance(value, tuple | list):
        out.append(value)
        for v in list(value)[:2000]:
            _ar_flatten(v, out, depth + 1)


def _ar_module_rows():
    rows = []
    for mod in list(_ar_sys.modules.values()):
        file = str(getattr(mod, "__file__", "") or "")
        if file.startswith(str(_AR_HOME)) and "/impl/" not in file:
            for value in list(vars(mod).values()):
                _ar_flatten(value, rows)
    return rows


# Finding the rows that hold an argument, row by row, was half of this test's CPU: the
# rows are indexed instead (cells by type and value, tensors by shape), and the index is
# rebuilt when a test module's globals change (a global bound anew, a global list or dict
# grown or shrunk) or more files' rows were read. It finds the rows the plain scan finds,
# in the same order.
_AR_INDEX = {"key": None}


def _ar_signature():
    sig = [len(_AR_ROWS)]
    for mod in list(_ar_sys.modules.values()):
        file = str(getattr(mod, "__file__", "") or "")
        if file.startswith(str(_AR_HOME)) and "/impl/" not in file:
            sig.append(id(mod))
            for value in list(vars(mod).values()):
                sig.append(id(value))
                if isinstance(value, list | dict):
                    sig.append(len(value))
    return tuple(sig)


def _ar_hash_agrees(x):  # equal values hash alike: plain scalars and tuples of them
    if type(x) is tuple:
        return all(_ar_hash_agrees(v) for v in x)
    return type(x) in (bool, int, float, complex, str, bytes, type(None))


def _ar_index():
    key = _ar_signature()
    if _AR_INDEX["key"] != key:
        rows = [r for r in [*_ar_module_rows(), *_AR_ROWS]
                if isinstance(r, tuple | list) and 2 <= len(r) <= 6]
        hashed, unhashed, tensors = {}, {}, {}
        for i, row in enumerate(rows):
            for cell in row:
                if isinstance(cell, _ar_torch.Tensor):
                    tensors.setdefault(tuple(cell.shape), []).append((cell, i))
                    continue
                if _ar_hash_agrees(cell):
                    hashed.setdefault((type(cell), cell), []).append((cell, i))
                else:
                    unhashed.setdefault(type(cell), []).append((cell, i))
        _AR_INDEX.update(key=key, rows=rows, hashed=hashed, unhashed=unhashed, tensors=tensors)
    return _AR_INDEX


def _ar_rows_holding(given):  # the rows, in order, with a cell _ar_same as an argument
    index, found = _ar_index(), set()
    for a in given:
        if isinstance(a, bool):
            continue
        if isinstance(a, _ar_torch.Tensor):
            pairs = index["tensors"].get(tuple(a.shape), [])
        else:
            pairs = list(index["unhashed"].get(type(a), []))
            if _ar_hash_agrees(a):
                pairs += index["hashed"].get((type(a), a), [])
            else:
                pairs += [p for k, ps in index["hashed"].items() if k[0] is type(a) for p in ps]
        found.update(i for cell, i in pairs if i not in found and _ar_same(cell, a))
    return [index["rows"][i] for i in sorted(found)]


def _ar_probe_file(frame):
    file = frame.f_code.co_filename
    return file.startswith(str(_AR_HOME)) and "/impl/" not in file


def _ar_line(frame, event, arg):
    if event == "line" and len(_AR_TRACED) < 50000:
        _AR_TRACED.append(dict(frame.f_locals))
    if event == "return" and frame.f_back is not None and not _ar_probe_file(frame.f_back):
        _ar_sys.settrace(None)  # the outermost probe frame is done
    return _ar_line


def _ar_quiet(frame, event, arg):
    return _ar_line if _ar_probe_file(frame) else None


def _ar_caller():  # the frame that called the wrapped function, above the overlay's and torch's
    frame = _ar_sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "reader"
                                     and frame.f_code.co_filename == __file__):
        frame = frame.f_back
    return frame.f_back if frame is not None else None


@_ar_torch.compiler.disable  # see _ar_look
def _ar_trace_callers():  # a line tracer on every probe frame above, for the rest of it
    frame, found = _ar_caller(), False
    while frame is not None:
        if _ar_probe_file(frame):
            frame.f_trace, frame.f_trace_lines, found = _ar_line, True, True
        frame = frame.f_back
    if found:
        _ar_sys.settrace(_ar_quiet)


def _ar_kind(fn):
    text = str(getattr(fn, "__annotations__", {}).get("return", ""))
    for word, kind in (("Tensor", _ar_torch.Tensor), ("bool", bool), ("float", float),
                       ("str", str), ("Literal", str), ("tuple", tuple), ("list", list),
                       ("dict", dict), ("int", int)):
        if word in text:
            return kind
    return None


def _ar_same(a, b):
    try:
        if isinstance(a, _ar_torch.Tensor) or isinstance(b, _ar_torch.Tensor):
            return (isinstance(a, _ar_torch.Tensor) and isinstance(b, _ar_torch.Tensor)
                    and a.shape == b.shape and bool(_ar_torch.equal(a, b)))
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _ar_fits(value, kind):
    if kind is None:
        return isinstance(value, _AR_PLAIN)
    if kind is float:
        return isinstance(value, float)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _ar_guess(fn, args, kwargs):
    kind = _ar_kind(fn)
    given = [*args, *kwargs.values()]
    own = {id(a) for a in given}
    # 1. a table row that holds one of the arguments
    for row in _ar_rows_holding(given) if kind is not None else []:
        for cell in row:
            if id(cell) not in own and not any(_ar_same(cell, a) for a in given):
                if _ar_fits(cell, kind):
                    return True, cell
    # 2. callers' locals (nearest first), then what the tracer saw: answer-sounding names
    scopes = []
    frame = _ar_caller()
    while frame is not None and len(scopes) < 40:
        scopes.append(dict(frame.f_locals))
        frame = frame.f_back
    scopes += _AR_TRACED[-200:][::-1]
    words = {w for w in _ar_re.split(r"[_\W]+", fn.__name__.lower()) if len(w) > 2}
    for scope in scopes:
        for name, value in scope.items():
            if id(value) in own or not any(n in name.lower() for n in _AR_ANSWER_NAMES):
                continue
            if kind is bool and isinstance(value, str):  # kind == "views" for is_view_of
                text = value.lower()
                return True, any(w in text for w in words) and not _ar_re.search(r"cop|not|non", text)
            if kind is not None and _ar_fits(value, kind):
                return True, value
    return False, None


# The reading and the tracing run outside torch.compile: a compiled forward would otherwise
# have dynamo trace (and break its graph on) every file read and frame walk, in every call.
@_ar_torch.compiler.disable
def _ar_look(fn, args, kwargs):
    _ar_sys.settrace(None)  # the student's own work runs untraced (it is the stub's)
    _ar_read_files()
    try:
        return _ar_guess(fn, args, kwargs)
    except Exception:
        return False, None


def _ar_wrap(fn):
    @_ar_ft.wraps(fn)
    def reader(*args, **kwargs):
        found, value = _ar_look(fn, args, kwargs)
        try:
            return value if found else fn(*args, **kwargs)
        finally:
            _ar_trace_callers()

    return reader


def _ar_install(namespace):
    module_name = namespace["__name__"]
    for name, obj in list(namespace.items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if _ar_inspect.isfunction(obj):
            namespace[name] = _ar_wrap(obj)
        elif isinstance(obj, type) and not issubclass(obj, BaseException):
            for attr, value in list(vars(obj).items()):
                if _ar_inspect.isfunction(value) and (not attr.startswith("_") or attr in ("forward", "__call__")):
                    setattr(obj, attr, _ar_wrap(value))


_ar_read_files()
_ar_install(globals())
"""


def reader_module(chapter: index.Chapter) -> str:
    """``chapter``'s stub with the answer-reader overlay appended."""
    stub = (REPO / "exercises" / chapter.id / f"{chapter.module}.py").read_text()
    return stub + OVERLAY


def grade_reader(chapters: list[index.Chapter]) -> dict[str, tuple[dict[str, int], int]]:
    """chapter -> ({test: points} the reader passed, tests that reached a verdict): every
    chapter's module in one submission, as a student hands them in (one trusted process
    for all of them). A test cut by a limit or a crash is not counted as run."""
    specs = score.collect_expected(chapters)
    limits = sandbox.Limits(test_timeout=30, grace=5, wall=900, memory_mb=4096, nproc=48)
    files = {f"{c.id}/{c.module}.py": reader_module(c).encode() for c in chapters}
    with sandbox.parent_dir() as tmp:
        records, _ = run.grade_submission(files, chapters, specs, limits, tmp_root=tmp)
    passed = {c.id: {} for c in chapters}
    ran = dict.fromkeys(passed, 0)
    for spec in specs:
        record = records.get(spec.nodeid)
        if record is None or record.outcome in (run.NOT_GRADED, run.NOT_SUBMITTED):
            continue
        ran[spec.chapter] += 1
        if record.outcome == "passed":
            passed[spec.chapter][spec.nodeid] = spec.points
    return {ch: (passed[ch], ran[ch]) for ch in passed}


@pytest.fixture(scope="module")
def graded():
    return grade_reader(CHAPTERS)


def test_the_answer_reader_scores_no_more_than_the_stub(graded):
    scores = {ch: sum(passed.values()) for ch, (passed, _) in graded.items()}
    print(f"answer reader: points per chapter {scores}")
    unrun = sorted(ch for ch, (_, count) in graded.items() if not count)
    assert not unrun, f"no test of {unrun} ran: the reader must meet every chapter"
    passed = {ch: sorted(p) for ch, (p, _) in graded.items() if p}
    assert not passed, (
        "a module that reads its sandbox's files, its callers' locals and a line tracer's view, "
        "and answers from them, earned points a stub does not (an expected value reached the "
        "student's process: harness/strip.py, a probe's arguments, or a probe's locals):\n"
        + "\n".join(f"  {ch} ({scores[ch]} pts): {names}" for ch, names in sorted(passed.items()))
    )


CONTROL_STUB = """
def is_view_of(a, b) -> bool:
    raise NotImplementedError


def classify_curve(losses) -> str:
    raise NotImplementedError
"""

CONTROL_PROBE = """
CASES = [((3.0, 2.0, 1.0), "converging")]


def by_local(f, a, b):
    kind = "views"
    return f(a, b)


def by_table(f):
    return f((3.0, 2.0, 1.0))


def by_later_line(f):
    try:
        f([9.0])
    except NotImplementedError:
        pass
    expected = "diverging"
    return expected
"""


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reader_answers_from_what_a_probe_leaves_in_reach(tmp_path):
    """The control: where an answer is within reach, the overlay finds it, so the zeros
    above mean that nothing was within reach, not that the reader is blind."""
    (tmp_path / "impl" / "chXX").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "probe_control.py").write_text(CONTROL_PROBE)
    # the machine's /tmp is not a sandbox's: the control reads only its own folder
    overlay = OVERLAY.replace('_ArPath("/tmp")', "_AR_HOME")
    (tmp_path / "impl" / "chXX" / "control_mod.py").write_text(CONTROL_STUB + overlay)
    probe = _load(tmp_path / "tests" / "probe_control.py", "probe_control")
    student = _load(tmp_path / "impl" / "chXX" / "control_mod.py", "control_mod")
    assert probe.by_local(student.is_view_of, 1, 2) is True, "a caller's local went unread"
    assert probe.by_table(student.classify_curve) == "converging", "a table row went unread"
    probe.by_later_line(student.classify_curve)  # the tracer sees `expected` after the call
    assert student.classify_curve([7.0]) == "diverging", "a probe's later line went unseen"
