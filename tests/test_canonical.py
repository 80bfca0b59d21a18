"""The canonical form the similarity report fingerprints: programs a script makes from
one another read the same; programs that differ in what they compute do not."""

from __future__ import annotations

import pytest

from grader.canonical import canonical, contract_names

STARTER = '''
import torch


def area(width, height):
    """The contract: its name is the course's."""
    raise NotImplementedError


class Box:
    size: int

    def volume(self, depth):
        raise NotImplementedError
'''
KEEP = contract_names(STARTER)

ORIGINAL = """
import torch


def area(width, height):
    scale = _twice(width)
    if height > 0 and scale != 1:
        return scale * height - width
    return torch.zeros(3, dtype=torch.float32, device=None) @ scale


def _twice(x):
    return x + x
"""
ZEROS = "torch.zeros(3, dtype=torch.float32, device=None)"

SAME_PROGRAM = {
    "renamed": ORIGINAL.replace("scale", "s").replace("_twice", "_double").replace("x", "y"),
    "reordered": ORIGINAL.split("\n\n\ndef _twice")[0].replace(
        "import torch\n", "import torch\n\n\ndef _twice(x):\n    return x + x\n"
    ),
    "commuted": ORIGINAL.replace("scale * height", "height * scale").replace(
        "height > 0 and scale != 1", "1 != scale and height > 0"
    ),
    "flipped": ORIGINAL.replace("height > 0", "0 < height"),
    "padded": ORIGINAL.replace(
        "    scale = _twice(width)\n",
        '    """Docs."""\n    scale = _twice(width)\n    pass\n    unused = 3\n    len(())\n'
        "    if False:\n        scale = 0\n    scale\n    assert True\n",
    ),
    "reformatted": ORIGINAL.replace("    return x + x", "    return (x +\n            x)  # twice"),
    "aliased": ORIGINAL.replace("import torch\n", "import torch as t\n").replace("torch.", "t."),
    "keywords reordered": ORIGINAL.replace(
        ZEROS, "torch.zeros(3, device=None, dtype=torch.float32)"
    ),
    "annotated": ORIGINAL.replace("def _twice(x):", "def _twice(x: float) -> float:"),
}

OTHER_PROGRAM = {
    "subtraction reversed": ORIGINAL.replace("scale * height - width", "width - scale * height"),
    "comparison reversed": ORIGINAL.replace("height > 0", "height < 0"),
    "matmul operands swapped": ORIGINAL.replace(f"{ZEROS} @ scale", f"scale @ {ZEROS}"),
    "an argument read instead": ORIGINAL.replace("scale * height - width", "height"),
    "a call with an effect": ORIGINAL.replace(
        "    scale = _twice(width)\n", "    scale = _twice(width)\n    print(scale)\n"
    ),
    "another library call": ORIGINAL.replace("torch.zeros", "torch.ones"),
    "another constant": ORIGINAL.replace("height > 0", "height > 1"),
    "an else kept": ORIGINAL.replace(
        "    return torch.zeros",
        "    if False:\n        pass\n    else:\n        print(1)\n    return torch.zeros",
    ),
}


@pytest.mark.parametrize("change", sorted(SAME_PROGRAM))
def test_a_script_s_rewrite_reads_as_the_original(change):
    rewritten = SAME_PROGRAM[change]
    assert rewritten != ORIGINAL
    assert canonical(rewritten, KEEP) == canonical(ORIGINAL, KEEP), (
        f"{change}: the canonical text of the rewritten module differs from the original's"
    )


@pytest.mark.parametrize("change", sorted(OTHER_PROGRAM))
def test_a_different_computation_reads_differently(change):
    changed = OTHER_PROGRAM[change]
    assert changed != ORIGINAL
    assert canonical(changed, KEEP) != canonical(ORIGINAL, KEEP), (
        f"{change}: canonical() made two different programs read the same"
    )


def test_the_contract_s_names_and_libraries_stay_the_student_s_do_not():
    text = canonical(ORIGINAL, KEEP)
    assert "def area(" in text and "torch.zeros" in text and "dtype=torch.float32" in text
    for chosen in ("scale", "_twice", "width", "height"):
        assert chosen not in text, (chosen, text)


def test_methods_attributes_and_class_fields():
    one = (
        "class Box:\n    size: int\n\n    def volume(self, depth):\n"
        "        self.cache = depth * self.size\n        return self._helper(self.cache)\n\n"
        "    def _helper(self, v):\n        return v\n"
    )
    two = (
        "class Box:\n    size: int\n\n    def _aid(me, w):\n        return w\n\n"
        "    def volume(me, d):\n        me.memo = me.size * d\n        return me._aid(me.memo)\n"
    )
    assert canonical(one, KEEP) == canonical(two, KEEP)
    assert "size" in canonical(one, KEEP) and "volume" in canonical(one, KEEP)


def test_what_does_not_parse_has_no_canonical_form():
    assert canonical("def f(:\n", KEEP) is None
    assert contract_names("def f(:\n") == frozenset()


def test_dead_statements_go_from_except_handlers_and_finally_blocks_too():
    plain = "def f(x):\n    try:\n        return g(x)\n    except ValueError:\n        raise\n"
    padded = (
        "def f(x):\n    try:\n        n = 1\n        return g(x)\n    except ValueError:\n"
        "        unused = 1\n        raise\n    finally:\n        pass\n"
    )
    assert canonical(padded, KEEP) == canonical(plain, KEEP)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("def f(x, y):\n    x += y\n    return x\n", "def f(x, y):\n    x = x + y\n    return x\n"),
        (
            "def f(x):\n    if not x:\n        return 1\n    else:\n        return 2\n",
            "def f(x):\n    if x:\n        return 2\n    else:\n        return 1\n",
        ),
        (
            "def f(x):\n    if x != 0:\n        return 1\n    else:\n        return 2\n",
            "def f(x):\n    if x == 0:\n        return 2\n    else:\n        return 1\n",
        ),
        (
            "def f(x):\n    if 1 > 2 or (3 < 2 and x):\n        x = 0\n    return x\n",
            "def f(x):\n    return x\n",
        ),
    ],
)
def test_rewrites_a_reader_sees_through(one, other):
    assert canonical(one, KEEP) == canonical(other, KEEP)


def test_a_test_that_is_not_constant_keeps_its_block():
    kept = "def f(x):\n    if x > 2 or 1 > 2:\n        x = 0\n    return x\n"
    assert "if " in canonical(kept, KEEP)
