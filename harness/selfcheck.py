"""Prove a chapter's tests can tell right from wrong; print the evidence as JSON.

    python -m harness.selfcheck ch02 [--json OUT]

For one chapter, runs the public and hidden tests against
  - the stubs in ``exercises/``      (every test must fail),
  - the reference ``solutions/``     (every test must pass),
  - each bug-zoo variant in ``grader/bugzoo/chNN/`` (at least one test must fail with a
    message naming the mechanism),
  - each correct alternative in ``grader/alternatives/chNN/`` (every test must pass: a
    right answer the reference does not happen to write is not punished).

A variant is a small Python file appended to the solution module, so it overrides just
the definitions it gets wrong. It declares ``EXPECT``, a regular expression that a
failure message must match (case-insensitive), and may declare ``SELECT``, a pytest
``-k`` expression narrowing the run to the tests that should catch it (for speed), and
``TASK``, the task whose tests must catch it (so blame lands where the mistake is).

An alternative is built the same way (appended, ``EDITS`` allowed) and declares nothing
else: its docstring says what it does differently and why that is still right.

A mistake inside a long function is written as ``EDITS = [(old, new), ...]``: each
``old`` text must occur exactly once in the solution and is replaced by ``new`` before
anything is appended, so the variant does not carry a copy that drifts from the solution.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # the project's tests run chapters in parallel


def variant_settings(path: Path) -> dict:
    """Read EXPECT, SELECT, TASK and EDITS from a variant without importing it."""
    found: dict = {"EXPECT": None, "SELECT": None, "TASK": None, "EDITS": []}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            name = getattr(node.targets[0], "id", None)
            if name == "EDITS":
                found[name] = [tuple(pair) for pair in ast.literal_eval(node.value)]
            elif name in found and isinstance(node.value, ast.Constant):
                found[name] = node.value.value
    return found


def apply_edits(solution: str, edits: list[tuple[str, str]], variant: str) -> str:
    """The solution with each (old, new) replacement made; an ``old`` that is missing or
    ambiguous is an error, so a variant cannot silently stop changing anything."""
    for old, new in edits:
        count = solution.count(old)
        if count != 1:
            raise ValueError(f"{variant}: EDITS text occurs {count} times, not once: {old!r}")
        solution = solution.replace(old, new)
    return solution


def build_variant(chapter, variant: Path, workdir: Path) -> Path:
    """A folder shaped like exercises/ whose chapter module is solution + variant."""
    from harness.target import NAMED_TARGETS

    solution = (NAMED_TARGETS["solutions"] / chapter.id / f"{chapter.module}.py").read_text(
        encoding="utf-8"
    )
    solution = apply_edits(solution, variant_settings(variant)["EDITS"], variant.name)
    root = workdir / variant.stem
    (root / chapter.id).mkdir(parents=True)
    appended = variant.read_text(encoding="utf-8")
    (root / chapter.id / f"{chapter.module}.py").write_text(
        f"{solution}\n\n# ---- bug zoo variant {variant.name} ----\n{appended}", encoding="utf-8"
    )
    return root


def check_chapter(chapter_id: str) -> dict:
    import torch

    from harness import index
    from harness.runner import run_tests

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    chapter = index.chapter(chapter_id)
    paths = [p for p in (chapter.public_tests, chapter.hidden_tests) if p.exists()]
    report = {
        "chapter": chapter_id,
        "stubs": [o.to_dict() for o in run_tests(paths, "exercises")],
        "solutions": [o.to_dict() for o in run_tests(paths, "solutions")],
        "variants": {},
        "alternatives": {},
    }
    with tempfile.TemporaryDirectory(prefix=f"bugzoo-{chapter_id}-") as tmp:
        for variant in sorted(chapter.bugzoo.glob("*.py")):
            settings = variant_settings(variant)
            impl = build_variant(chapter, variant, Path(tmp))
            extra = ["-k", settings["SELECT"]] if settings["SELECT"] else []
            outcomes = run_tests(paths, impl, extra)
            report["variants"][variant.stem] = {
                "expect": settings["EXPECT"],
                "task": settings["TASK"],
                "outcomes": [o.to_dict() for o in outcomes],
            }
        for alternative in sorted(chapter.alternatives.glob("*.py")):
            impl = build_variant(chapter, alternative, Path(tmp) / "alternatives")
            outcomes = run_tests(paths, impl)
            report["alternatives"][alternative.stem] = [o.to_dict() for o in outcomes]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter")
    parser.add_argument("--json", type=Path, help="write the report here instead of stdout")
    args = parser.parse_args(argv)
    report = check_chapter(args.chapter)
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
