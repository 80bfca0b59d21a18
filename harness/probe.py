"""The one way a test reaches the student's code: a probe.

A probe is a module-level function in a test file that calls the student's module and
returns what it observed as plain data (``harness.wire``)::

    @probe
    def dists(n, m, d, seed):
        g = torch.Generator().manual_seed(seed)
        x, y = torch.randn(n, d, generator=g), torch.randn(m, d, generator=g)
        return x, y, sh.pairwise_sq_dists(x, y)

    def test_dists_on_square_inputs():
        x, y, got = dists(4, 4, 3, seed=0)       # plain tensors, whatever the code returned
        assert torch.allclose(got, reference(x, y)), "..."

The test's assertions judge what came back; the probe only observes. Where a probe runs
is chosen here, once, for every test:

- in-process (the default; a student's ``pytest exercises/chNN``): the probe runs right
  here, so ``print`` and ``breakpoint()`` work and tracebacks point at the student's
  lines; arguments and results still pass through ``wire.plain`` so both ways see the
  same values;
- split (the grader, ``use(transport)``): the probe runs in a separate process beside
  the student's code and only plain data comes back; the assertions, the reference
  answers and the verdict stay in a process where no submission code ever ran.

A probe never computes the expected answer (that is the test's job, on the trusted
side) and never decides pass or fail.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import itertools
import operator
import os
import re
from pathlib import Path
from time import perf_counter as _clock  # bound here, before any student module loads

from harness import invariants, wire

MESSAGE_LIMIT = 300  # characters of a student exception's text that reach a report
BROKEN_LIMIT = 600  # characters of a broken invariant's text (the harness's own words)


class Probe:
    """A module-level test function that observes the student's code (see module doc)."""

    def __init__(self, fn) -> None:
        if "<locals>" in fn.__qualname__:
            raise TypeError(
                f"probe {fn.__qualname__} must be defined at module level: the grader runs "
                "it in another process, where it looks it up by name"
            )
        self.fn = fn
        self.name = fn.__qualname__
        self.file = Path(inspect.getsourcefile(fn)).resolve()
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        start = _clock()
        try:
            return _transport.call(self, args, kwargs)
        finally:
            _last_call[0] = _clock() - start

    def __repr__(self) -> str:
        return f"<probe {self.name} of {self.file.name}>"


def probe(fn) -> Probe:
    """Mark ``fn`` as a probe: it runs beside the student's code and returns plain data."""
    return Probe(fn)


_last_call = [float("nan")]  # seconds the last probe call took, seen from the test's side


def last_call_ms() -> float:
    """How long the last probe call took, in ms, timed by the process that runs the test
    (in a split run the trusted one, which no student code reaches). Whatever a probe
    timed inside that call took no longer, whatever the student's process reports."""
    return _last_call[0] * 1000


# ---- errors from the student's side --------------------------------------------------


class StudentError(Exception):
    """Something the student's code did while a probe ran, reported where tests judge.

    ``type_name`` is the exception's class as the student's process named it,
    ``message`` at most ``MESSAGE_LIMIT`` characters of its text, ``where`` the last of
    the student's own frames as ``file:line in function`` strings.
    """

    def __init__(self, type_name: str, message: str = "", where: tuple[str, ...] = ()) -> None:
        self.type_name = str(type_name)[:100]
        self.message = str(message)[:MESSAGE_LIMIT]
        self.where = tuple(str(w)[:200] for w in where)[-5:]
        super().__init__(self.message)

    def describe(self) -> str:
        """One line: ``TypeName: message (at ch01/shapes.py:12 in broadcast_shape)``."""
        last = self.message.strip().splitlines()[-1] if self.message.strip() else ""
        text = f"{self.type_name}: {last}" if last else self.type_name
        return f"{text} (at {self.where[-1]})" if self.where else text


class StudentTimeout(StudentError):
    """The student's code did not return within the test's time limit; its process was killed."""


class StudentCrashed(StudentError):
    """The student's process ended while a probe ran (``os._exit``, a signal, memory)."""


class Tampering(StudentCrashed):
    """The student's module replaced names outside its own namespace (torch, Dynamo, the
    harness, the tests' probes, builtins): nothing measured in its process is trusted."""

    def __init__(self, message: str = "", where: tuple[str, ...] = ()) -> None:
        super().__init__("Tampering", message, where)

    def __str__(self) -> str:
        return self.message


class NotGraded(Exception):
    """The grader could not run this test here — its sandbox did not start, the machine
    was too busy to tell a slow call from a hung one: the grader's failure, never the
    student's. The test is reported "not graded" and the next grading run runs it again."""


# Builtin exceptions a student's exception is rebuilt as (by its nearest such base), so
# ``pytest.raises(ValueError)`` means the same in both ways of running. Everything else
# (BaseExceptions such as SystemExit included) arrives as a plain StudentError.
REBUILT = tuple(
    getattr(builtins, name)
    for name in (
        "ArithmeticError AssertionError AttributeError BufferError EOFError "
        "FloatingPointError ImportError IndexError KeyError LookupError MemoryError "
        "ModuleNotFoundError NameError NotImplementedError OSError OverflowError "
        "RecursionError ReferenceError RuntimeError StopIteration TypeError "
        "UnboundLocalError UnicodeError ValueError ZeroDivisionError"
    ).split()
)
_REBUILT_BY_NAME = {c.__name__: c for c in REBUILT}
_hybrids: dict[type, type] = {}


def rebuilt_error(type_name: str, base: str | None, message: str, where=()) -> StudentError:
    """A StudentError that is also an instance of the builtin ``base`` (when allowed)."""
    if type_name == TAMPERING_TYPE:
        return Tampering(message, where)
    if type_name == invariants.BROKEN_TYPE:  # the test's own failure, as in one process
        return invariants.Broken(str(message)[:BROKEN_LIMIT])
    cls = _REBUILT_BY_NAME.get(str(base))
    if cls is None:
        return StudentError(type_name, message, where)
    if cls not in _hybrids:
        _hybrids[cls] = type(cls.__name__, (StudentError, cls), {"__module__": "student"})
    return _hybrids[cls](type_name, message, where)


def error_report(exc: BaseException, impl_root: Path | None = None) -> dict:
    """What the student's process says about an exception: plain, bounded data."""
    base = next((c.__name__ for c in type(exc).__mro__ if c in REBUILT), None)
    name = type(exc).__qualname__
    module = type(exc).__module__
    if module not in ("builtins", None):
        name = f"{module}.{name}"
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a student's __str__ may raise
        text = ""
    where = []
    tb = exc.__traceback__
    while tb is not None:
        file = tb.tb_frame.f_code.co_filename
        if impl_root is not None and str(file).startswith(str(impl_root)):
            rel = (
                Path(file).relative_to(impl_root) if Path(file).is_relative_to(impl_root) else file
            )
            where.append(f"{rel}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}")
        tb = tb.tb_next
    limit = BROKEN_LIMIT if isinstance(exc, invariants.Broken) else MESSAGE_LIMIT
    return {"type": name[:100], "base": base, "message": text[:limit], "where": where[-5:]}


def is_from_student(exc: BaseException) -> bool:
    """An exception raised by the student's code rather than by a test's own check."""
    return isinstance(exc, StudentError) or not isinstance(exc, AssertionError)


@contextlib.contextmanager
def because(explanation: str):
    """If the student's code raises inside this block, fail with ``explanation`` (what
    was observed, which mechanism to look at) and the last line of the original error.

    Stubs (``NotImplementedError``), import problems, timeouts and crashes keep their
    own reports; the test's own failed assertions pass through unchanged.
    """
    from harness.target import TargetImportError

    try:
        yield
    except (NotImplementedError, TargetImportError, StudentTimeout, StudentCrashed, NotGraded):
        raise
    except Exception as exc:
        if not is_from_student(exc):
            raise
        detail = exc.describe() if isinstance(exc, StudentError) else last_line(exc)
        raise AssertionError(f"{explanation}\n(your code raised {detail})") from exc


def last_line(exc: BaseException) -> str:
    text = str(exc).strip()
    last = text.splitlines()[-1] if text else ""
    if len(last) > MESSAGE_LIMIT:
        last = last[:MESSAGE_LIMIT] + " [...]"
    return f"{type(exc).__name__}: {last}" if last else type(exc).__name__


# ---- names the student's module must leave alone ---------------------------------------

TAMPERING_TYPE = f"{__name__}.Tampering"  # how the student's process names the error

# Modules whose names the probes, the harness and the tests rely on: counters, spies,
# comparisons, the transport itself. Watched when already imported at the baseline (the
# watch never imports anything).
WATCHED_MODULES = (
    "builtins",
    "math",
    "sys",
    "numpy",
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.autograd",
    "torch.autograd.function",
    "torch.autograd.graph",
    "torch.testing",
    "torch.compiler",
    "torch.overrides",
    "torch.utils.data",
    "torch._dynamo",
    "torch._dynamo.utils",
    "torch._dynamo.testing",
    "torch._dynamo.eval_frame",
    "pytest",
)
WATCHED_CLASSES = (
    ("torch", "Tensor"),
    ("torch._C", "TensorBase"),
    ("torch.nn", "Module"),
    ("torch.nn", "Parameter"),
    ("torch.autograd", "Function"),
    ("torch._dynamo.testing", "CompileCounterWithBackend"),
)
# Values that may be rebound without meaning anything: plain scalars (flags, counts,
# cached strings), which no probe measures by identity.
_SCALARS = (type(None), bool, int, float, complex, str, bytes)
# What the interpreter itself rebinds while code runs.
_MOVING = {
    "sys": set(
        "last_type last_value last_traceback last_exc exc_info stdout stderr stdin "
        "displayhook excepthook breakpointhook modules path meta_path path_hooks "
        "path_importer_cache argv ps1 ps2 tracebacklimit".split()
    ),
    "builtins": {"_", "__import__", "help", "copyright", "credits", "license", "exit", "quit"},
}
# Modules the course's code reaches whose names are rebound by design: pytest swaps
# ``warnings.filters`` and ``showwarning`` around every test, and CUDA's first use inside
# a test rebinds ``torch.cuda`` names (``default_generators``) on a GPU machine.
_UNWATCHED = ("warnings", "torch.cuda")
_MISSING = object()
# Names torch itself rebinds to a wrapper of the same function (``__wrapped__``) when a
# part of it is first imported: ``import torch._dynamo`` wraps ``torch.manual_seed``.
_LIBRARY_WRAPS = {("torch", "manual_seed")}


def _one(key):
    """``operator.itemgetter`` of a single key, returning a 1-tuple like the others."""
    return lambda mapping: (mapping[key],)


def _settle_library_patches(modules) -> None:
    """Make the replacements torch makes of names once, before the record is taken:
    Dynamo's first compile wraps ``nn.Module.__init__`` and ``__setstate__``, and the
    first instance of an optimizer class wraps that class's ``step`` (the tests' own
    optimizer classes included)."""
    import sys

    guard = sys.modules.get("torch._dynamo.mutation_guard")
    install = getattr(guard, "install_generation_tagging_init", None)
    if callable(install):
        install()
    optim = sys.modules.get("torch.optim.optimizer")
    base = getattr(optim, "Optimizer", None)
    if not isinstance(base, type):
        return
    for mod in modules:
        for value in list(vars(mod).values()):
            if isinstance(value, type) and issubclass(value, base) and value is not base:
                if not getattr(value.step, "hooked", None):  # as Optimizer.__init__ does
                    value.step = base.profile_hook_step(value.step)
                    value.step.hooked = True


# A dotted name in source text: ``torch.optim.SGD``, also across spaces or a line break.
_DOTTED = re.compile(r"\b([A-Za-z_]\w*)((?:\s*\.\s*[A-Za-z_]\w*)+)")
_CHAINS: dict[str, frozenset[tuple[str, ...]]] = {}


def _dotted_chains(file: str) -> frozenset[tuple[str, ...]]:
    """Every dotted name written in a source file, as (first, attr, attr...); a superset of
    its code's attribute chains (a comment's or a string's count too, which can only add
    modules to watch). Cached per file: ``warm_up`` fills it for the harness in the trusted
    process before the fork, so a student process neither reads nor parses those again."""
    if file not in _CHAINS:
        try:
            text = Path(file).read_text()
        except (TypeError, OSError, ValueError):
            return frozenset()
        _CHAINS[file] = frozenset(
            (head, *(part.strip() for part in tail.split(".")[1:]))
            for head, tail in _DOTTED.findall(text)
        )
    return _CHAINS[file]


def warm_up() -> None:
    """Scan the loaded harness modules' sources now (the grader calls this before it forks
    student processes, which then find them scanned)."""
    import sys

    for mod in list(sys.modules.values()):
        if _is_course_file(mod):
            _dotted_chains(getattr(mod, "__file__", None))


def _modules_reached(mod) -> list:
    """The modules whose names ``mod``'s code reads at call time: those bound to its
    global names (``time`` for ``time.perf_counter()``), and the submodules its source
    reaches through them (``torch.optim`` for ``torch.optim.SGD``). Never imports."""
    import types

    names = vars(mod)
    found = {id(v): v for v in names.values() if isinstance(v, types.ModuleType)}
    for head, *attrs in _dotted_chains(getattr(mod, "__file__", None)):
        owner = names.get(head)
        for attr in attrs:
            if not isinstance(owner, types.ModuleType):
                break
            owner = vars(owner).get(attr)  # not getattr: a module's __getattr__ may import
            if isinstance(owner, types.ModuleType):
                found[id(owner)] = owner
    return list(found.values())


def _is_course_file(mod) -> bool:
    """A module of the harness or a test file of the course (the probes' own modules)."""
    name = getattr(mod, "__name__", "") or ""
    if name == "harness" or name.startswith("harness."):
        return True
    file = getattr(mod, "__file__", None) or ""
    if not isinstance(file, str) or not file.endswith(".py"):
        return False
    if not os.path.basename(file).startswith("test_"):
        return False
    import sys

    return not file.startswith((sys.prefix, sys.base_prefix))


class Watch:
    """A record, by identity, of the names a probe relies on, and a check that they are
    still bound to the same objects.

    ``start()`` takes the record before the student's module is imported (the grader's
    student process loads the probe files first, so every instrument is bound already):
    the modules listed above, the course's own modules and classes, and every module
    their code reads names from (``_modules_reached``);
    ``check(when)`` after its import and after every call compares, and raises
    ``Tampering`` naming what was replaced. Names added later (a lazily imported
    submodule) and plain scalars are not compared. Once tampering was seen, every later
    check fails too: nothing that process measures is trusted. The record is a shallow
    copy of each namespace (~5000 names with torch and Dynamo loaded); a check compares
    the ids of what each name is bound to now in bulk, about a millisecond per call.
    """

    def __init__(self) -> None:
        self.record: list[tuple] | None = None
        self.modules: dict[str, object] = {}
        self.found = ""

    def start(self, extra=()) -> None:
        import sys

        course = [m for m in list(sys.modules.values()) if _is_course_file(m)] + list(extra)
        _settle_library_patches(course)
        record, modules = [], {}

        def keep(label: str, live) -> None:
            moving = _MOVING.get(label, ())
            saved = {
                k: v for k, v in dict(live).items() if k not in moving and type(v) not in _SCALARS
            }
            if saved:
                keys = tuple(saved)
                getter = operator.itemgetter(*keys) if len(keys) > 1 else _one(keys[0])
                record.append((label, live, saved, getter, tuple(saved.values())))

        for name in WATCHED_MODULES:
            mod = sys.modules.get(name)
            if mod is not None:
                modules[name] = mod
                keep(name, vars(mod))
        for owner, name in WATCHED_CLASSES:
            cls = getattr(sys.modules.get(owner), name, None)
            if isinstance(cls, type):
                keep(f"{owner}.{name}", cls.__dict__)
        for mod in course:
            name = mod.__name__
            if name in modules:
                continue
            modules[name] = mod
            keep(name, vars(mod))
            for attr, value in list(vars(mod).items()):
                if isinstance(value, type) and value.__module__ == name:
                    keep(f"{name}.{attr}", value.__dict__)
        for mod in course:  # every module the probes and the harness read names from
            for used in _modules_reached(mod):
                name = getattr(used, "__name__", None)
                if (
                    name in modules
                    or sys.modules.get(name) is not used  # not an imported module (torch.ops)
                    or any(name == u or name.startswith(u + ".") for u in _UNWATCHED)
                ):
                    continue
                modules[name] = used
                keep(name, vars(used))
        names = tuple(modules)
        self.modules_ids = (
            operator.itemgetter(*names) if len(names) > 1 else _one(names[0]),
            tuple(modules.values()),
        )
        self.record, self.modules, self.found = record, modules, ""
        self._flatten()

    def _flatten(self) -> None:
        """Every record's lookup and saved values in one sequence each, so an unchanged
        state is confirmed in a single pass in C (a few hundred namespaces, ~5000 names)."""
        self._getters = [r[3] for r in self.record]
        self._lives = [r[1] for r in self.record]
        self._values = tuple(itertools.chain.from_iterable(r[4] for r in self.record))

    def _unchanged(self) -> bool:
        import sys

        now = itertools.chain.from_iterable(map(operator.call, self._getters, self._lives))
        getter, values = self.modules_ids
        try:
            return all(map(operator.is_, now, self._values)) and all(
                map(operator.is_, getter(sys.modules), values)
            )
        except KeyError:  # a name removed
            return False

    def changes(self) -> list[str]:
        """The names replaced or removed since ``start()``, as ``module.name``: compared
        by identity in bulk (never ``==`` on the values, which a replacement could answer),
        names looked up one by one only where something changed."""
        import sys

        if self.record is None or self._unchanged():
            return []
        found = []
        for i, (label, live, saved, getter, values) in enumerate(self.record):
            try:
                if all(map(operator.is_, getter(live), values)):
                    continue
            except KeyError:
                pass
            for key, old in saved.items():
                new = live.get(key, _MISSING)
                if new is old:
                    continue
                if (label, key) in _LIBRARY_WRAPS and getattr(new, "__wrapped__", None) is old:
                    saved[key] = new  # torch's own wrapper of the same function
                    self.record[i] = (label, live, saved, getter, tuple(saved.values()))
                    self._flatten()
                    continue
                found.append(f"{label}.{key}")
        getter, values = self.modules_ids
        try:
            same = all(map(operator.is_, getter(sys.modules), values))
        except KeyError:
            same = False
        if not same:
            found += [
                f"sys.modules[{name!r}]"
                for name, mod in self.modules.items()
                if sys.modules.get(name) is not mod
            ]
        return found

    def refuse_if_tampered(self) -> None:
        """Fail at once where tampering was seen before (its process stays untrusted)."""
        if self.found:
            raise Tampering(self.found)

    def check(self, when: str) -> None:
        self.refuse_if_tampered()
        changed = self.changes()
        if changed:
            shown = ", ".join(changed[:6]) + (
                f" and {len(changed) - 6} more" if len(changed) > 6 else ""
            )
            self.found = (
                f"tampering: {shown} no longer the object the tests rely on (seen {when}); "
                "your module may change only its own names, so nothing its process measured "
                "is trusted"
            )
            raise Tampering(self.found)


# ---- where probes run ------------------------------------------------------------------


class _PlainCall:
    """``module.fn`` seen from a test body: a call with plain data in and out."""

    def __init__(self, transport, fn, label: str) -> None:
        self._transport, self._fn, self._label = transport, fn, label

    def __call__(self, *args, **kwargs):
        args, kwargs = plain_arguments(self._label, args, kwargs)
        with self._transport.inside(self._label):
            result = self._fn(*args, **kwargs)
        return readable(result)

    def __getattr__(self, name: str):
        raise AttributeError(
            f"{self._label}.{name}: a test body only calls the student's functions with "
            "plain data; reach deeper (methods, live objects) inside a @probe"
        )

    def __repr__(self) -> str:
        return f"<student's {self._label}>"


def plain_arguments(label: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments of a call into the student's code as plain data, or a TypeError that
    says the test is at fault (a course bug: live objects belong inside a probe)."""
    try:
        return wire.plain((tuple(args), dict(kwargs)))
    except wire.NotPlainData as exc:
        raise TypeError(
            f"course bug: {label} was given something that is not plain data ({exc}); "
            "build live objects inside a @probe"
        ) from None


def readable(result):
    """``result`` as plain data, or ``NotPlainData`` saying the tests cannot read it."""
    try:
        return wire.plain(result)
    except wire.NotPlainData as exc:
        raise wire.NotPlainData(f"the tests cannot read what your code returned: {exc}") from None


class InProcess:
    """Run probes here, in the test's own process (a student's own pytest run)."""

    name = "in-process"

    def __init__(self) -> None:
        self.depth = 0  # > 0 while a probe runs: the student's module is reached live
        self.watch = Watch()  # started by the plugin once the test files are imported

    @contextlib.contextmanager
    def inside(self, label: str = "a call"):
        """Reach the student's module live; afterwards, check that it left the names the
        tests rely on alone (a replacement fails the call as tampering) and report an
        invariant it broke even where a probe caught that failure."""
        self.watch.refuse_if_tampered()
        if not self.depth:
            invariants.take_pending()
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if not self.depth:
                self.watch.check(f"after {label}")
                broken = invariants.take_pending()
                if broken is not None:
                    raise broken

    def call(self, p: Probe, args: tuple, kwargs: dict):
        args, kwargs = plain_arguments(f"probe {p.name}", args, kwargs)
        with self.inside(f"probe {p.name}"):
            result = p.fn(*args, **kwargs)
        return readable(result)

    def attr(self, chapter: str, module: str, name: str, live):
        """``chapter_module(...).name``: live inside a probe; from a test body a plain
        call (functions, classes) or a plain copy (anything else)."""
        if name.startswith("_") and not self.depth:
            # pytest's collection looks for marks on every module global (``_mock_name``):
            # the student's module is imported only once a test reaches it, after the
            # watch's record was taken.
            raise AttributeError(f"{chapter}/{module}.py's {name} is not reached from here")
        value = invariants.checked(live(), chapter, name)
        if self.depth:
            return value
        if callable(value):
            return _PlainCall(self, value, f"{chapter}/{module}.py's {name}")
        return readable(value)

    def begin_test(self, nodeid: str, timeout: float | None) -> None:
        pass

    def end_test(self) -> None:
        pass


class StudentSide(InProcess):
    """The student's process of a split run: everything there is reached live."""

    name = "student-side"

    def __init__(self) -> None:
        super().__init__()
        self.depth = 1

    def answer(self, label: str, run, importing: bool = False):
        """``run()`` for one request of the trusted side, then the watch's check: the
        student's import and every call must leave the names the probes use alone. The
        record is taken (``watch.start()``) once the probe files are loaded, before the
        student's module is imported. Tampering seen at the import fails every later
        request, each with an error of its own, rather than the import itself (a failed
        import is one error object re-raised by every test of the chapter)."""
        self.watch.refuse_if_tampered()
        invariants.take_pending()
        try:
            value = run()
        except BaseException:
            self.watch.check(f"after {label}")
            broken = invariants.take_pending()
            if broken is not None:
                raise broken from None
            raise
        try:
            self.watch.check(f"after {label}")
        except Tampering:
            if not importing:
                raise
        broken = invariants.take_pending()
        if broken is not None:
            raise broken
        return value


_transport = InProcess()


def use(transport) -> None:
    """Route every probe call through ``transport`` from now on (the grader's split)."""
    global _transport
    _transport = transport


def current():
    return _transport
