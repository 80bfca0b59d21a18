"""Prove a chapter's tests can tell right from wrong; print the evidence as JSON.

    python -m harness.selfcheck ch02 [--json OUT]
    python -m harness.selfcheck ch02 ch03 ... --jobs N    # a JSON line per chapter, as each ends

For one chapter, runs the public and hidden tests against
  - the stubs in ``exercises/``      (every test must fail),
  - the reference ``solutions/``     (every test must pass),
  - each bug-zoo variant in ``grader/bugzoo/chNN/`` (at least one test must fail with a
    message naming the mechanism; its run stops at the first such failure),
  - each correct alternative in ``grader/alternatives/chNN/`` (every test must pass: a
    right answer the reference does not happen to write is not punished).

A variant is a small Python file appended to the solution module, so it overrides just
the definitions it gets wrong. It declares ``EXPECT``, a regular expression that a
failure message must match (case-insensitive), and may declare ``SELECT``, a pytest
``-k`` expression narrowing the run to the tests that should catch it (for speed), and
``TASK``, the task whose tests must catch it (so blame lands where the mistake is; only
they run).

An alternative is built the same way (appended, ``EDITS`` allowed) and declares nothing
else: its docstring says what it does differently and why that is still right. It runs
the tests that read, on the solutions, a name of the module whose behaviour it can change
(``names_reached``, ``tests_reaching``): the rest is the solution's, proven already.

A mistake inside a long function is written as ``EDITS = [(old, new), ...]``: each
``old`` text must occur exactly once in the solution and is replaced by ``new`` before
anything is appended, so the variant does not carry a copy that drifts from the solution.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import multiprocessing
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Iterator
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


def names_reached(chapter, variant: Path) -> set[str] | None:
    """The top-level names of the module whose behaviour ``variant`` can change, or None
    for the whole module: the definitions it replaces, adds or edits, and every top-level
    definition whose code names one of those (and so on). A change that module-level
    code reads, or an edit outside a definition, reaches the whole module."""
    from harness.target import NAMED_TARGETS

    solution = (NAMED_TARGETS["solutions"] / chapter.id / f"{chapter.module}.py").read_text(
        encoding="utf-8"
    )
    settings, text = variant_settings(variant), variant.read_text(encoding="utf-8")
    imported = {b for node in ast.parse(solution).body for b in _imports(node)}
    changed = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            changed.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):  # the same import changes nothing
            changed |= {name for name, _ in _imports(node) - imported}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            changed |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return None  # code that runs at import: anything may see it
    top = ast.parse(solution).body
    for old, _ in settings["EDITS"]:
        line = solution.count("\n", 0, solution.index(old)) + 1
        node = next((n for n in top if n.lineno <= line <= n.end_lineno), None)
        if not isinstance(node, ast.FunctionDef | ast.ClassDef):
            return None
        changed.add(node.name)
    module = ast.parse(apply_edits(solution, settings["EDITS"], variant.name) + "\n" + text)
    names_in: dict[str, set[str]] = {}  # top-level definition -> the names its code reads
    for node in module.body:
        read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and type(n.ctx) is ast.Load}
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names_in.setdefault(node.name, set()).update(read)
        elif not isinstance(node, ast.Import | ast.ImportFrom) and read & changed:
            return None  # module-level code reads something changed
    reached, grew = set(changed), True
    while grew:
        more = {name for name, read in names_in.items() if read & reached} - reached
        reached |= more
        grew = bool(more)
    return reached


def tests_reaching(touched: dict[str, set[str]], names: set[str] | None) -> list[str] | None:
    """The node ids of the tests that read one of ``names`` from the module, or read
    nothing from it (a check of its source); None for every test."""
    if names is None:
        return None
    chosen = [nodeid for nodeid, read in touched.items() if not read or read & names]
    return chosen or None


def _imports(node) -> set[tuple[str, str]]:
    """``{(name bound, what it is bound to)}`` of an import statement."""
    if isinstance(node, ast.Import):
        return {
            ((a.asname or a.name).split(".")[0], a.asname and a.name or a.name.split(".")[0])
            for a in node.names
        }
    if isinstance(node, ast.ImportFrom):
        return {(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names}
    return set()


def rejects(settings: dict):
    """Whether an outcome proves the variant rejected: a failure whose message matches
    EXPECT, of a test of TASK (when given). The variant's run stops at the first such one
    (the proof needs one); a run without one goes to its end, every outcome reported."""
    expect = re.compile(settings["EXPECT"] or "(?!)", re.IGNORECASE)

    def proven(outcome) -> bool:
        return (
            outcome.outcome in ("failed", "error")
            and expect.search(outcome.message) is not None
            and settings["TASK"] in (None, outcome.task)
        )

    return proven


def check_chapter(chapter_id: str) -> dict:
    import torch

    from harness import index
    from harness.runner import run_tests
    from harness.target import REPO

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    chapter = index.chapter(chapter_id)
    paths = [p for p in (chapter.public_tests, chapter.hidden_tests) if p.exists()]
    touched: dict[str, set[str]] = {}  # test -> the names it reads (on the solutions)
    report = {
        "chapter": chapter_id,
        "stubs": [o.to_dict() for o in run_tests(paths, "exercises")],
        "solutions": [o.to_dict() for o in run_tests(paths, "solutions", record=touched)],
        "variants": {},
        "alternatives": {},
    }
    with tempfile.TemporaryDirectory(prefix=f"bugzoo-{chapter_id}-") as tmp:
        for variant in sorted(chapter.bugzoo.glob("*.py")):
            settings = variant_settings(variant)
            impl = build_variant(chapter, variant, Path(tmp))
            extra = ["-k", settings["SELECT"]] if settings["SELECT"] else []
            extra += ["--task", settings["TASK"]] if settings["TASK"] else []  # must catch it
            outcomes = run_tests(paths, impl, extra, enough=rejects(settings))
            report["variants"][variant.stem] = {
                "expect": settings["EXPECT"],
                "task": settings["TASK"],
                "outcomes": [o.to_dict() for o in outcomes],
            }
        for alternative in sorted(chapter.alternatives.glob("*.py")):
            impl = build_variant(chapter, alternative, Path(tmp) / "alternatives")
            chosen = tests_reaching(touched, names_reached(chapter, alternative))
            outcomes = run_tests([f"{REPO}/{n}" for n in chosen] if chosen else paths, impl)
            report["alternatives"][alternative.stem] = [o.to_dict() for o in outcomes]
    return report


def check_chapters(chapter_ids: list[str], jobs: int) -> Iterator[tuple[str, dict | str]]:
    """``(chapter, report)`` for each chapter as it ends (``report`` is the error's text
    when its check broke), ``jobs`` at a time. Each chapter runs in a process forked from
    this one after torch and pytest are imported, so none pays for those imports again and
    none sees another chapter's state."""
    import torch

    from harness import index, judge, plugin, probe, runner  # noqa: F401 - imported once, here

    with contextlib.suppress(ImportError):  # the hidden tests' (the grader extra)
        import hypothesis  # noqa: F401

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    waiting, running = list(chapter_ids), {}
    with tempfile.TemporaryDirectory(prefix="selfcheck-") as tmp:
        while waiting or running:
            while waiting and len(running) < jobs:
                chapter_id = waiting.pop(0)
                report = Path(tmp) / f"{chapter_id}.json"
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _check_in_child(chapter_id, report)
                running[pid] = (chapter_id, report)
            pid, status = os.wait()  # only the chapters forked above are our children
            chapter_id, report = running.pop(pid)
            if os.waitstatus_to_exitcode(status) == 0 and report.exists():
                yield chapter_id, json.loads(report.read_text(encoding="utf-8"))
            else:
                error = report.with_suffix(".error")
                text = error.read_text(encoding="utf-8") if error.exists() else ""
                yield chapter_id, f"ended with {os.waitstatus_to_exitcode(status)}\n{text}"


def _check_in_child(chapter_id: str, report: Path) -> None:
    """The forked child: write the chapter's report (or its error) and end, never return."""
    code = 1
    os.dup2(2, 1)  # the parent's stdout carries the reports; a chapter's prints go to stderr
    try:
        report.write_text(json.dumps(check_chapter(chapter_id)), encoding="utf-8")
        code = 0
    except BaseException:  # noqa: BLE001 - the parent reports it; the child must not go on
        report.with_suffix(".error").write_text(traceback.format_exc(), encoding="utf-8")
    finally:
        for worker in multiprocessing.active_children():  # os._exit skips their atexit cleanup
            worker.terminate()
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="+", metavar="chapter")
    parser.add_argument("--json", type=Path, help="write the report here instead of stdout")
    parser.add_argument(
        "--jobs", type=int, help="chapters checked at once, each in its own process (JSON lines)"
    )
    args = parser.parse_args(argv)
    if len(args.chapters) == 1 and args.jobs is None:
        text = json.dumps(check_chapter(args.chapters[0]), indent=1)
        if args.json:
            args.json.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text + "\n")
        return 0
    if args.json:
        parser.error("--json takes one chapter; several are written to stdout, a line each")
    failed = 0
    for chapter_id, report in check_chapters(args.chapters, max(1, args.jobs or 1)):
        if isinstance(report, str):
            failed += 1
            report = {"chapter": chapter_id, "error": report}
        sys.stdout.write(json.dumps(report) + "\n")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
