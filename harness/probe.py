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
from pathlib import Path

from harness import wire

MESSAGE_LIMIT = 300  # characters of a student exception's text that reach a report


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
        return _transport.call(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<probe {self.name} of {self.file.name}>"


def probe(fn) -> Probe:
    """Mark ``fn`` as a probe: it runs beside the student's code and returns plain data."""
    return Probe(fn)


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
    return {"type": name[:100], "base": base, "message": text[:MESSAGE_LIMIT], "where": where[-5:]}


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


# ---- where probes run ------------------------------------------------------------------


class _PlainCall:
    """``module.fn`` seen from a test body: a call with plain data in and out."""

    def __init__(self, transport, fn, label: str) -> None:
        self._transport, self._fn, self._label = transport, fn, label

    def __call__(self, *args, **kwargs):
        args, kwargs = plain_arguments(self._label, args, kwargs)
        with self._transport.inside():
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

    @contextlib.contextmanager
    def inside(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def call(self, p: Probe, args: tuple, kwargs: dict):
        args, kwargs = plain_arguments(f"probe {p.name}", args, kwargs)
        with self.inside():
            result = p.fn(*args, **kwargs)
        return readable(result)

    def attr(self, chapter: str, module: str, name: str, live):
        """``chapter_module(...).name``: live inside a probe; from a test body a plain
        call (functions, classes) or a plain copy (anything else)."""
        value = live()
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


_transport = InProcess()


def use(transport) -> None:
    """Route every probe call through ``transport`` from now on (the grader's split)."""
    global _transport
    _transport = transport


def current():
    return _transport
