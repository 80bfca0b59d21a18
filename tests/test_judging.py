"""Comparisons that say what they mean: ``harness.judge`` refuses every value built to
satisfy a careless comparison, and chapter tests judge the student's values only with it.

``torch.allclose``, ``torch.equal``, ``(a == b).all()`` and ``pytest.approx`` broadcast or
trust the left operand's ``__eq__``, so a ``torch.empty(0, 1, 1, 1, 1, 1, 1)``, a tensor
subclass or a float with a lying ``__eq__`` satisfies them (issue 22).
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
import torch

from harness import judge
from harness.target import REPO

EMPTY = torch.empty(0, 1, 1, 1, 1, 1, 1)
WANT = torch.arange(12.0).reshape(3, 4)


class LyingTensor(torch.Tensor):
    def __eq__(self, other):
        return torch.ones(self.shape, dtype=torch.bool)

    __hash__ = torch.Tensor.__hash__

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.allclose, torch.Tensor.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class LyingFloat(float):
    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


def refused(check) -> str:
    with pytest.raises(AssertionError) as info:
        check()
    return str(info.value)


def test_the_careless_comparisons_are_fooled():
    """The reason for this module: each attack below passes the library's comparisons."""
    assert torch.allclose(EMPTY, WANT) and bool((EMPTY == WANT).all())
    assert bool(torch.isfinite(EMPTY).all())
    assert torch.allclose(torch.full((3, 4), math.nan).as_subclass(LyingTensor), WANT)
    assert LyingFloat(math.nan) == pytest.approx(2.5)


@pytest.mark.parametrize(
    "got, seen",
    [
        (EMPTY, "shape (0, 1, 1, 1, 1, 1, 1)"),
        (torch.zeros(1), "shape (1,)"),
        (WANT.double(), "dtype torch.float64"),
        (torch.full((3, 4), math.nan), "12 of 12 entries differ"),
        (torch.full((3, 4), 1e30), "12 of 12 entries differ"),
        (WANT.clone().as_subclass(LyingTensor), "tensor subclass"),
        (LyingFloat(1.0), "LyingFloat"),
        ([[0.0] * 4] * 3, "expected a tensor"),
    ],
    ids=["empty", "broadcast", "dtype", "nan", "huge", "subclass", "lying-float", "list"],
)
def test_close_and_equal_refuse_degenerate_values(got, seen):
    for check in (
        lambda: judge.close(got, WANT, "teach", atol=1e-5, rtol=1e-5),
        lambda: judge.equal(got, WANT, "teach"),
    ):
        message = refused(check)
        assert seen in message and message.endswith("— teach"), message
    assert not judge.is_close(got, WANT, atol=1e-5, rtol=1e-5)
    assert not judge.is_equal(got, WANT)


def test_close_passes_within_its_tolerances_and_by_dtype_policy():
    judge.close(WANT + 1e-6, WANT, atol=1e-5, rtol=0)
    judge.close(WANT.double(), WANT, atol=0, rtol=0, dtype="float")
    judge.close(WANT.double(), WANT, atol=0, rtol=0, dtype=torch.float64)
    judge.close(torch.tensor([math.nan]), torch.tensor([math.nan]), atol=0, rtol=0, equal_nan=True)
    judge.equal(torch.empty(0, 3), torch.empty(0, 3), "an empty answer where one is expected")
    assert "expected a floating dtype" in refused(
        lambda: judge.close(WANT.long(), WANT, atol=1, rtol=0, dtype="float")
    )
    assert "entries differ" in refused(lambda: judge.close(WANT + 1e-3, WANT, atol=1e-5, rtol=0))


@pytest.mark.parametrize(
    "got",
    [LyingFloat(2.5), True, math.nan, math.inf, torch.tensor(2.5), "2.5", None, EMPTY],
    ids=["lying-float", "bool", "nan", "inf", "tensor", "str", "none", "empty"],
)
def test_number_refuses_what_is_not_a_plain_number_near_the_answer(got):
    refused(lambda: judge.number(got, 2.5, "teach", abs=1e-6))
    assert not judge.is_number(got, 2.5, abs=1e-6)


def test_number_and_exactly_accept_honest_values():
    judge.number(2.5 + 1e-9, 2.5, abs=1e-6)
    judge.number(3, 3.0)
    judge.number([1.0, 2.0], (1.0, 2.0 + 1e-9), abs=1e-6)
    judge.exactly({"a": [1, "x"], "b": (True, None)}, {"a": [1, "x"], "b": (True, None)})
    assert "got int 1" in refused(lambda: judge.exactly(1, True))
    assert "LyingFloat" in refused(lambda: judge.exactly([LyingFloat(0.0)], [1.0]))
    assert "[1]: got 2.5" in refused(lambda: judge.number([1.0, 2.5], [1.0, 2.0]))


@pytest.mark.parametrize(
    "got, seen",
    [
        (EMPTY, "shape (0, 1, 1, 1, 1, 1, 1)"),
        (torch.full((3, 4), math.nan), "not finite"),
        (torch.full((3, 4), 1e30), "magnitude 1e+30"),
        (torch.zeros(3, 4).as_subclass(LyingTensor), "tensor subclass"),
        (torch.zeros(3, 4, dtype=torch.long), "floating dtype"),
        (LyingFloat(1.0), "expected a tensor"),
    ],
    ids=["empty", "nan", "huge", "subclass", "integer", "float"],
)
def test_answer_refuses_what_a_self_comparison_would_pass(got, seen):
    """judge.answer is the gate before invariance checks: each value here would compare
    equal to itself under a changed input, yet is no answer of shape (3, 4)."""
    assert seen in refused(lambda: judge.answer(got, (3, 4), "the module's output"))


def test_answer_accepts_an_ordinary_output():
    judge.answer(torch.randn(3, 4, generator=torch.Generator().manual_seed(0)), (3, 4))
    judge.answer(torch.full((2,), -5e5, dtype=torch.float64), (2,))


def test_all_finite_and_all_true_refuse_conditions_over_no_values():
    assert "empty" in refused(lambda: judge.all_finite(EMPTY, "teach"))
    judge.all_finite(EMPTY, empty_ok=True)
    assert "not finite" in refused(lambda: judge.all_finite(torch.tensor([1.0, math.inf])))
    refused(lambda: judge.all_finite(math.nan))
    refused(lambda: judge.all_finite(torch.ones(2).as_subclass(LyingTensor)))
    assert "covers no values" in refused(lambda: judge.all_true(EMPTY > 0))
    assert "shape (1,)" in refused(lambda: judge.all_true(torch.ones(1) > 0, shape=(3,)))
    assert "first at [1]" in refused(lambda: judge.all_true(torch.tensor([1.0, -1.0]) > 0))
    judge.all_true(torch.ones(3) > 0, shape=(3,))


# ---- chapter tests use the vocabulary -------------------------------------------------

# Comparisons that broadcast or trust the operand's __eq__: ``x.all()``, ``torch.all(x)``,
# ``torch.allclose``/``x.allclose``, ``torch.equal``/``x.equal`` and ``pytest.approx``.
CARELESS = {"all", "allclose", "equal", "approx"}


def chapter_test_files() -> list[Path]:
    files = sorted(REPO.glob("exercises/ch*/test_*.py"))
    files += sorted(REPO.glob("grader/hidden/ch*/*.py"))
    return [f for f in files if f.name != "__init__.py"]


def careless_calls(source: str) -> list[str]:
    """``line: text`` of each call of a careless comparison (never ``judge.<name>``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        if node.func.attr in CARELESS and not (isinstance(owner, ast.Name) and owner.id == "judge"):
            found.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_the_finder_sees_every_careless_form():
    source = (
        "assert torch.allclose(a, b)\nassert a.allclose(b)\nassert torch.equal(a, b)\n"
        "assert (a == b).all()\nassert torch.all(a == b)\nassert x == pytest.approx(1.0)\n"
        "judge.equal(a, b)\njudge.all_true(a > 0)\njudge.close(a, b, atol=0, rtol=0)\n"
    )
    assert [f.split(":")[0] for f in careless_calls(source)] == list("123456")


@pytest.mark.parametrize("path", chapter_test_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_chapter_tests_judge_with_the_vocabulary(path):
    found = careless_calls(path.read_text())
    assert not found, (
        f"{path.relative_to(REPO)} compares with forms an empty tensor, a tensor subclass or a "
        f"lying __eq__ satisfies; use harness.judge (close, equal, number, exactly, all_finite, "
        f"all_true): {found[:5]}"
    )
