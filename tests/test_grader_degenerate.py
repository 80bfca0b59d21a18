"""The degenerate returner: a submission that computes nothing and returns values built to
satisfy careless comparisons gets nothing in any chapter.

Each chapter's solution is graded, through the split grader, with an overlay that replaces
every public function of the module, and every public method (plus ``forward``,
``__call__`` and ``__getitem__``) of every class the module defines, by one returning

- ``empty``: ``torch.empty(0, 1, 1, 1, 1, 1, 1)``, which broadcasts against any tensor of up
  to six dimensions, so ``allclose``, ``(a == b).all()``, ``isfinite(x).all()`` and
  ``pytest.approx`` all hold on it;
- ``nan`` / ``huge``: the solution's own answer with every number replaced by NaN or by
  1e30 — right shape and dtype, wrong values (booleans flipped, every string "?", ``None``
  and empty containers given a NaN). The solution runs on deep copies of the arguments, paths
  moved to a scratch folder, so none of its effects are kept;
- ``liar_tensor``: that NaN answer as a tensor subclass whose ``==``, ``allclose``,
  ``equal``, ``eq`` and ``isclose`` say True;
- ``liar_object``: a ``float`` subclass holding NaN whose ``==`` says True to anything.

The ``empty`` student returns the empty tensor everywhere (the sharpest of the five); the
``mixed`` student rotates the other four kinds from call to call, each function starting
at the next kind, so every chapter meets every kind. An
exception of the solution is swallowed: a degenerate returner never raises the error a
test may expect. A stub scores 0 in every chapter (``tests/test_chapters.py`` proves that
each stub fails every test, repair stubs included), so "no more than the stub" is 0.

A ``control`` carries the same overlay passing every call through and must pass, so a zero
above is the degenerate values' doing, not a broken overlay's. It is graded on the first
test of every task (every function and method the overlay wraps is called there), not on
all of them: the whole run would cost as much as the solutions' own.

The same grading run proves the course as the grader runs it: every chapter's tests, split
across a trusted test process and the student's processes, fail on the stubs (a third
student) and pass on the solutions (a fourth, ``reference``, handed in as they are: its
run is also the grader's proof, which it would otherwise pay for again).

One grading run (all fifteen chapters, four students, two jobs) and the control's serve
every assertion: about 2 minutes of CPU, longer on a loaded machine.
"""

from __future__ import annotations

import ast
import io

import pytest

from grader import collect, grade, run, sandbox, score
from harness import index
from harness.target import NAMED_TARGETS
from tests.grader_data.helpers import results

pytestmark = pytest.mark.timeout(1800)

CHAPTERS = list(index.chapters().values())
STUDENTS = {"empty": ("empty", 0), "mixed": ("mixed", 0)}

# Tests whose point the overlay cannot take away, because the behaviour they check is not a
# returned value: the solution's constructors are kept (a degenerate value cannot build a
# module), so tests of what a constructor registers pass; and PyTorch itself seeds NumPy
# and Python's random in every DataLoader worker, so a seed_worker that does nothing keeps
# those streams apart. Each is genuine behaviour of the submission, not a vacuous check.
GENUINE = {
    "ch04 public: test_every_block_is_registered": "the Encoder's constructor",
    "ch04 public: test_eval_and_train_reach_every_block": "the Encoder's constructor",
    "ch04 public: test_running_norm_statistics_are_buffers": "RunningNorm's constructor",
    "ch04 hidden: test_other_sizes_register_every_block": "the Encoder's constructor",
    "ch04 hidden: test_no_blocks_and_train_eval_propagate": "the Encoder's constructor",
    "ch06 public: test_nhwc_conv_takes_the_images_channels": "ChannelsLastConv's constructor",
    "ch06 hidden: test_nhwc_conv_parameters_are_its_convs": "ChannelsLastConv's constructor",
    "ch05 hidden: test_global_generators_stay_per_worker_and_reproducible": "PyTorch's seeding",
    "ch07 hidden: test_the_projections_are_the_contracts_linears": "the module's constructor",
    "ch07 hidden: test_an_indivisible_embedding_is_rejected": "the module's constructor",
    # a meta tensor holds no values to corrupt: its device, dtype and shape are the solution's
    "ch07 public: test_causal_mask_is_made_on_the_requested_device[meta]": "a meta tensor",
    "ch10 public: test_the_mask_moves_with_the_layer": "CausalSelfAttention's constructor",
    # the solution's forward raises before there is a value to replace
    "ch10 hidden: test_gpt_refuses_more_positions_than_block_size": "GPT.forward's own check",
}


def by_source_tests() -> set[str]:
    """The tests that judge how a function is written from the module's text
    (harness/source_rules.py), as results name them: ``chNN public|hidden: test_x``."""
    found = set()
    for chapter in CHAPTERS:
        for kind, path in (("public", chapter.public_tests), ("hidden", chapter.hidden_tests)):
            if not path.is_file():
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                    if "source_rules" in ast.unparse(node):
                        found.add(f"{chapter.id} {kind}: {node.name}")
    return found


# Those tests rightly refuse the overlay's own code, which rewrites the module's names through
# globals(): the control's loss there is the rule working, so it is excused them (and only them).
BY_SOURCE = by_source_tests()

OVERLAY = r"""

# ---- degenerate returner (tests/test_grader_degenerate.py) ----
import copy as _dg_copy
import dataclasses as _dg_dc
import functools as _dg_ft
import inspect as _dg_inspect
import pathlib as _dg_pathlib
import tempfile as _dg_tempfile

import torch as _dg_torch

_DG_MODE = {mode!r}
_DG_OFFSET = {offset!r}
_DG_KINDS = ("nan", "huge", "liar_tensor", "liar_object")
_DG_NAN = float("nan")
_DG_SCRATCH = _dg_tempfile.mkdtemp(prefix="degenerate-")


class _DgAny(float):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = float.__hash__


class _DgLiar(_dg_torch.Tensor):
    def __eq__(self, other):
        return _dg_torch.ones(self.shape, dtype=_dg_torch.bool)

    __hash__ = _dg_torch.Tensor.__hash__

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (_dg_torch.allclose, _dg_torch.equal, _dg_torch.Tensor.allclose,
                    _dg_torch.Tensor.equal):
            return True
        if func in (_dg_torch.isclose, _dg_torch.eq, _dg_torch.Tensor.eq,
                    _dg_torch.Tensor.__eq__):
            return _dg_torch.ones(args[0].shape, dtype=_dg_torch.bool)
        return super().__torch_function__(func, types, args, kwargs or {{}})


def _dg_spoil(x, kind):
    if isinstance(x, _dg_torch.Tensor):
        x = x.detach()
        if x.dtype == _dg_torch.bool:
            out = ~x
        elif x.is_floating_point() or x.is_complex():
            out = _dg_torch.full_like(x, 1e30 if kind == "huge" else _DG_NAN)
        else:
            out = _dg_torch.full_like(x, 2**40 if x.dtype == _dg_torch.int64 else -1)
        return out.as_subclass(_DgLiar) if kind == "liar_tensor" else out
    if isinstance(x, bool):
        return not x
    if isinstance(x, int | float):
        return 1e30 if kind == "huge" else _DG_NAN
    if isinstance(x, str):
        return "?"
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_dg_spoil(v, kind) for v in x))
    if isinstance(x, list | tuple):
        return type(x)(_dg_spoil(v, kind) for v in x) if x else type(x)([_DG_NAN])
    if isinstance(x, dict):
        return {{k: _dg_spoil(v, kind) for k, v in x.items()}} if x else {{"?": _DG_NAN}}
    if x is None:
        return _DG_NAN
    if _dg_dc.is_dataclass(x) and not isinstance(x, type):
        try:
            return _dg_dc.replace(x, **{{f.name: _dg_spoil(getattr(x, f.name), kind)
                                        for f in _dg_dc.fields(x) if f.init}})
        except Exception:
            return _DG_NAN
    if _dg_inspect.isgenerator(x):
        return iter(())
    return x


def _dg_moved(x):
    if isinstance(x, _dg_pathlib.PurePath):
        return _dg_pathlib.Path(_DG_SCRATCH) / x.name
    return x


def _dg_wrap(fn, start):
    calls = [start]

    @_dg_ft.wraps(fn)
    def degenerate(*args, **kwargs):
        if _DG_MODE == "identity":
            return fn(*args, **kwargs)
        if _DG_MODE == "empty":
            return _dg_torch.empty(0, 1, 1, 1, 1, 1, 1)
        kind = _DG_KINDS[calls[0] % len(_DG_KINDS)]
        calls[0] += 1
        if kind == "liar_object":
            return _DgAny(_DG_NAN)
        try:
            args, kwargs = _dg_copy.deepcopy(
                ([_dg_moved(a) for a in args], {{k: _dg_moved(v) for k, v in kwargs.items()}})
            )
            value = fn(*args, **kwargs)
        except Exception:
            return _dg_torch.full((3,), _DG_NAN)
        return _dg_spoil(value, kind)

    return degenerate


_DG_METHODS = ("forward", "__call__", "__getitem__")


def _dg_install(namespace):
    module_name = namespace["__name__"]
    start = _DG_OFFSET
    for name, obj in list(namespace.items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if _dg_inspect.isfunction(obj):
            namespace[name] = _dg_wrap(obj, start)
            start += 1
        elif isinstance(obj, type) and not issubclass(obj, BaseException):
            for attr, value in list(vars(obj).items()):
                if attr.startswith("_") and attr not in _DG_METHODS:
                    continue
                if isinstance(value, staticmethod):
                    setattr(obj, attr, staticmethod(_dg_wrap(value.__func__, start)))
                elif isinstance(value, classmethod):
                    setattr(obj, attr, classmethod(_dg_wrap(value.__func__, start)))
                elif _dg_inspect.isfunction(value):
                    setattr(obj, attr, _dg_wrap(value, start))
                else:
                    continue
                start += 1


_dg_install(globals())
"""


def module_of(root, chapter: index.Chapter) -> str:
    return (root / chapter.id / f"{chapter.module}.py").read_text()


def degenerate_module(chapter: index.Chapter, mode: str, offset: int) -> str:
    """``chapter``'s solution module with the degenerate overlay appended."""
    return module_of(NAMED_TARGETS["solutions"], chapter) + OVERLAY.format(mode=mode, offset=offset)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("subs")
    out = tmp_path_factory.mktemp("out")
    plain = {"stubs": NAMED_TARGETS["exercises"], "reference": NAMED_TARGETS["solutions"]}
    for student in [*STUDENTS, *plain]:
        for chapter in CHAPTERS:
            folder = subs / student / chapter.id
            folder.mkdir(parents=True)
            text = (
                module_of(plain[student], chapter)
                if student in plain
                else degenerate_module(chapter, *STUDENTS[student])
            )
            (folder / f"{chapter.module}.py").write_text(text)
    found, _ = collect.discover(subs, CHAPTERS)
    progress = io.StringIO()
    grade.grade(found, out, CHAPTERS, jobs=2, progress_stream=progress, gradebook=False)
    assert "error:" not in progress.getvalue(), progress.getvalue()[-4000:]
    return out


@pytest.fixture(scope="module")
def control():
    """The pass-through overlay's split run of the first test of every task (the tests
    that read the module's text refuse any overlay, so none of those): name -> (outcome,
    message). It must be the overlay itself that a degenerate student's zeros leave out,
    or those zeros could come from an overlay that broke every test for everyone."""
    specs = score.collect_expected(CHAPTERS)
    first: dict[str, score.TestSpec] = {}  # task -> its first test
    for spec in specs:
        if name_of(spec).split("[")[0] not in BY_SOURCE:
            first.setdefault(spec.task, spec)
    files = {
        f"{c.id}/{c.module}.py": degenerate_module(c, "identity", 0).encode() for c in CHAPTERS
    }
    wanted = {s.nodeid: s for s in first.values()}
    with sandbox.parent_dir() as tmp:
        records, _ = run.grade_submission(
            files, CHAPTERS, specs, grade.default_limits(2), tmp_root=tmp, only=list(wanted)
        )
    return {
        name_of(s): (records[n].outcome, records[n].message) if n in records else ("not run", "")
        for n, s in wanted.items()
    }


def name_of(spec: score.TestSpec) -> str:
    """``chNN public|hidden: test_x[...]``, as results.json names a test."""
    return f"{spec.chapter} {'hidden' if spec.hidden else 'public'}: {spec.name}"


def passed_by_chapter(out, student) -> dict[str, list[str]]:
    """chapter -> the names of the tests ``student`` passed (and the points)."""
    found: dict[str, list[str]] = {}
    for t in results(out, student)["tests"]:
        if t.get("status") == "passed" and t.get("score", 0) > 0 and t["name"] not in GENUINE:
            found.setdefault(t["name"].split()[0], []).append(f"{t['name']} ({t['score']} pts)")
    return found


@pytest.mark.parametrize("student", sorted(STUDENTS))
def test_a_degenerate_returner_scores_nothing(graded, student):
    passed = passed_by_chapter(graded, student)
    points = {
        ch: sum(int(n.rsplit("(", 1)[1].split()[0]) for n in names) for ch, names in passed.items()
    }
    print(f"{student}: points per chapter {dict(sorted(points.items()))}")
    for names in passed.values():
        for name in names:
            print(f"    {student} passed {name}")
    assert not passed, f"{student} earned points with degenerate values: {passed}"


def test_the_overlay_itself_costs_nothing(control):
    """The control (every wrapped call passed through) passes the first test of every task."""
    tasks = {t.id for c in CHAPTERS for t in c.tasks}
    lost = {
        name: message[:300] for name, (outcome, message) in control.items() if outcome != "passed"
    }
    assert len(control) == len(tasks) and not lost, (
        f"the pass-through overlay lost tests ({len(control)} graded of {len(tasks)} tasks), "
        f"so zeros prove nothing: {lost}"
    )


def by_chapter(out, student: str, chapter: str) -> list[dict]:
    return [t for t in results(out, student)["tests"] if t["name"].startswith(f"{chapter} ")]


@pytest.mark.parametrize("chapter", [c.id for c in CHAPTERS])
def test_every_test_passes_on_the_solutions_when_split(graded, chapter):
    tests = by_chapter(graded, "reference", chapter)
    assert tests, f"{chapter}: no tests were graded"
    wrong = [
        f"{t['name']}: {t['output'][:300]}"
        for t in tests
        if t["status"] != "passed" and "not graded on this machine" not in t["output"]
    ]
    assert not wrong, f"{chapter} fails on the reference solution when split:\n" + "\n".join(wrong)


@pytest.mark.parametrize("chapter", [c.id for c in CHAPTERS])
def test_every_test_fails_on_the_stubs_when_split(graded, chapter):
    tests = by_chapter(graded, "stubs", chapter)
    assert tests, f"{chapter}: no tests were graded"
    wrong = [t["name"] for t in tests if t["status"] == "passed" and t["max_score"]]
    assert not wrong, f"{chapter} passes on the stubs when split: {wrong}"
