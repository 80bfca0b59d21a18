"""Mutation testing of the reference solutions (a maintenance tool, not a test).

    python tests/mutants.py ch00 [ch02 ...] [--jobs 2] [--timeout 60] [--json OUT] [--show]
                            [--only split,check_contract]
    nox -s mutants -- ch00

For each chapter, every mutation cosmic-ray's operators make of ``solutions/chNN/
<module>.py`` (an operator swapped, a number changed, a comparison flipped, a loop that
never runs, ...) is run against the chapter's public and hidden tests. A mutant is
*killed* when some test fails, *survived* when all pass. A survivor in *given* code (a
top-level definition the stub holds unchanged and no task names: the chapter's data, toy
devices and models) is reported as given, not graded code. Other survivors are either a
missing test or an equivalent mutant: the latter are listed, each with a one-line
argument, in ``grader/bugzoo/chNN/equivalent_mutants.toml``::

    [[mutant]]
    key = "plot_losses: fig, ax = plt.subplots(figsize=(5, 3.2)) => ...(figsize=(6, 3.2))"
    why = "the figure's size is not part of the contract"

Why cosmic-ray: it mutates source text and exposes its operators as a library, so each
mutant runs through our own loader (a folder shaped like ``exercises/``, ``--impl``) in
a process forked from one that already imported torch, instead of paying an import per
mutant. Each mutant's run is a fork, so a mutant that hangs is simply killed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import multiprocessing
import os
import select
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # mutation_baseline, beside this file
os.environ.setdefault("OMP_NUM_THREADS", "1")


@dataclass
class Mutant:
    key: str  # "definition: original line => mutated line" (+ " #k" when repeated)
    operator: str
    occurrence: int
    code: str
    line: int = 0  # where the mutated node starts in the solution
    outcome: str = ""  # killed | survived | equivalent | given
    killed_by: str = ""


@dataclass
class Site:
    """One place an operator can mutate: its ``occurrence`` among that operator's places in
    the module, and ``place``, a name for it that edits elsewhere in the module keep."""

    operator: str
    occurrence: int
    definition: str
    line: int
    text: str  # the stripped source line the mutated node starts on
    place: str


def mutation_sites(source: str, definitions: set[str] | None = None) -> list[Site]:
    """Every place cosmic-ray's argument-free operators offer in ``source`` (only in these
    top-level ``definitions``, when given), in the order ``mutants_of`` makes mutants."""
    import cosmic_ray.plugins as plugins
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.ast.ast_query import ASTQuery

    nodes = list(ast_nodes(get_ast(source)))
    lines = source.splitlines()
    sites, ranks = [], {}
    for name in sorted(plugins.operator_names()):
        op_class = plugins.get_operator(name)
        if op_class.arguments():
            continue
        op = op_class()
        positions = [(node, start) for node in nodes for start, _ in op.mutation_positions(node)]
        for occurrence, (node, start) in enumerate(positions):
            definition = ASTQuery(node).get_definition_name() or "<module>"
            if definitions is not None and definition.split(".")[0] not in definitions:
                continue
            text = lines[start[0] - 1].strip() if start[0] - 1 < len(lines) else "?"
            base = f"{definition}|{name}|{text}|{start[1]}"
            ranks[base] = ranks.get(base, 0) + 1
            sites.append(
                Site(name, occurrence, definition, start[0], text, f"{base}|{ranks[base]}")
            )
    return sites


def mutants_of(
    source: str, definitions: set[str] | None = None, sites: list[Site] | None = None
) -> list[Mutant]:
    """Every distinct mutant cosmic-ray's argument-free operators make of ``source``; with
    ``definitions``, only those of these top-level definitions; with ``sites`` (from
    ``mutation_sites``), only the mutants made there. Either way each has the key, and is
    left out or kept, as in the whole list (a key counts the earlier mutants with the same
    key, all on a line with the same text in the same definition: those are made too)."""
    import pickle

    import cosmic_ray.plugins as plugins
    from cosmic_ray.ast import get_ast
    from cosmic_ray.mutating import MutationVisitor

    every = mutation_sites(source, definitions)
    wanted = None if sites is None else {s.place for s in sites}
    if wanted is not None:
        kin = {(s.definition, s.text) for s in every if s.place in wanted}
        every = [s for s in every if (s.definition, s.text) in kin]
    found, seen_code, seen_keys = [], set(), {}
    original = _behaviour(source)
    # cosmic-ray's mutate_code parses the module again for every mutant; a pickled copy of
    # one parse loads ten times faster and walks to the same occurrence
    parsed = pickle.dumps(get_ast(source), protocol=pickle.HIGHEST_PROTOCOL)
    operators = {name: plugins.get_operator(name)() for name in {s.operator for s in every}}
    lines = source.splitlines()
    for site in every:
        visitor = MutationVisitor(site.occurrence, operators[site.operator])
        mutated = visitor.walk(pickle.loads(parsed))
        code = mutated.get_code() if visitor.mutation_applied else None
        if code is None or code == source or code in seen_code:
            continue
        if _behaviour(code) == original:
            continue  # only an annotation, a docstring or an error's wording changed
        seen_code.add(code)
        changed = [
            ln[1:]
            for ln in difflib.unified_diff(lines, code.splitlines(), lineterm="", n=0)
            if ln.startswith("+") and not ln.startswith("+++")
        ]
        after = " / ".join(c.strip() for c in changed) or "(line removed)"
        key = f"{site.definition}: {site.text} => {after}"
        seen_keys[key] = seen_keys.get(key, 0) + 1
        if seen_keys[key] > 1:
            key += f" #{seen_keys[key]}"
        if wanted is None or site.place in wanted:
            found.append(Mutant(key, site.operator, site.occurrence, code, site.line))
    return found


def given_lines(stub: str, solution: str, task_names: set[str]) -> set[int]:
    """Lines of the solution's given code: top-level statements that occur unchanged in the
    stub and define no task (the chapter's data, toy devices and models, result types).

    A survivor there shows what the tests do not grade, and must not grade: the student
    did not write that code. It is reported as *given*, beside the equivalents."""
    import ast

    stub_units = {ast.dump(node) for node in ast.parse(stub).body}
    lines = set()
    for node in ast.parse(solution).body:
        if getattr(node, "name", None) in task_names or ast.dump(node) not in stub_units:
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        lines.update(range(first, node.end_lineno + 1))
    return lines


def _behaviour(source: str) -> str | None:
    """``source``'s AST without what cannot change behaviour: annotations (lazy under
    ``from __future__ import annotations``), docstrings and the text of raised errors."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
            for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                a.annotation = None
            for a in (node.args.vararg, node.args.kwarg):
                if a is not None:
                    a.annotation = None
        if isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
        if isinstance(node, ast.Raise) and node.exc is not None:
            for sub in ast.walk(node.exc):
                if isinstance(sub, ast.Call):
                    sub.args = [
                        ast.Constant("") if isinstance(a, ast.JoinedStr | ast.Constant) else a
                        for a in sub.args
                    ]
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                body[0] = ast.Pass()
    return ast.dump(tree)


def equivalents(chapter) -> dict[str, str]:
    path = chapter.bugzoo / "equivalent_mutants.toml"
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text())
    return {m["key"]: m["why"] for m in data.get("mutant", [])}


def _task_of(chapter, key: str) -> str | None:
    """The task whose definition the mutant changes (``Class.method`` counts for Class)."""
    top = key.split(":", 1)[0].split(".", 1)[0]
    return next((t.id for t in chapter.tasks if t.name == top), None)


def _run_mutant(chapter, mutant: Mutant, workdir: Path, timeout: float, write_fd: int) -> None:
    """In a forked child: the chapter's tests against the mutant; report on ``write_fd``."""
    import pytest

    from harness.runner import run_tests

    root = workdir / "impl"
    (root / chapter.id).mkdir(parents=True)
    (root / chapter.id / f"{chapter.module}.py").write_text(mutant.code)
    paths = [p for p in (chapter.public_tests, chapter.hidden_tests) if p.exists()]
    args = ["-x", "--timeout", str(timeout)]
    # Most mutants are killed by the tests of the task they mutate: run those first and
    # the whole chapter only for a mutant that survives them.
    task = _task_of(chapter, mutant.key)
    outcomes = run_tests(paths, root, [*args, "--task", task]) if task else []
    failed = [o for o in outcomes if o.outcome in ("failed", "error")]
    if not failed:
        outcomes = run_tests(paths, root, args)
        failed = [o for o in outcomes if o.outcome in ("failed", "error")]
    report = {"killed": bool(failed) or not outcomes, "by": failed[0].nodeid if failed else ""}
    os.write(write_fd, json.dumps(report).encode())
    del pytest


def run_mutants(items: list, jobs: int, timeout: float) -> None:
    """Run each (chapter, mutant) in a process forked from this one, ``jobs`` at a time,
    and set its outcome (killed / survived) and what killed it."""
    import pytest  # noqa: F401  (imported once here, not in every fork)

    import harness.runner  # noqa: F401

    for name in dict.fromkeys(n for chapter, _ in items for n in chapter.preload):
        __import__(name)
    pending = list(items)
    running: dict[int, tuple] = {}
    started = time.monotonic()
    while pending or running:
        while pending and len(running) < jobs:
            chapter, mutant = pending.pop(0)
            tmp = tempfile.TemporaryDirectory(prefix=f"mutant-{chapter.id}-")
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    _run_mutant(chapter, mutant, Path(tmp.name), timeout, w)
                finally:
                    os._exit(0)
            os.close(w)
            running[pid] = (chapter, mutant, r, time.monotonic(), tmp)
        fds = {entry[2]: pid for pid, entry in running.items()}
        ready, _, _ = select.select(list(fds), [], [], 0.2)
        now = time.monotonic()
        for pid, (_, mutant, r, t0, tmp) in list(running.items()):
            if r in ready:
                data = b""
                while chunk := os.read(r, 65536):
                    data += chunk
                os.waitpid(pid, 0)
                report = json.loads(data) if data else {"killed": True, "by": "(the run crashed)"}
                mutant.outcome = "killed" if report["killed"] else "survived"
                mutant.killed_by = report["by"]
            elif now - t0 > 4 * timeout:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                mutant.outcome, mutant.killed_by = "killed", "(hung: killed)"
            else:
                continue
            os.close(r)
            tmp.cleanup()
            del running[pid]
            done = len(items) - len(pending) - len(running)
            if done % 25 == 0 or done == len(items):
                survived = sum(m.outcome == "survived" for _, m in items)
                label = "+".join(dict.fromkeys(c.id for c, _ in items))
                print(
                    f"[{label}] {done}/{len(items)} mutants run, {survived} survived, "
                    f"{now - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )


def run_chapter(
    chapter_id: str, jobs: int, timeout: float, show: bool, only: set[str] | None = None
) -> dict:
    from harness import index

    chapter = index.chapter(chapter_id)
    source = (REPO / "solutions" / chapter.id / f"{chapter.module}.py").read_text()
    # with ``only``, the mutants of these definitions only (after changing them, say)
    mutants = mutants_of(source, only)
    started = time.monotonic()
    run_mutants([(chapter, m) for m in mutants], jobs, timeout)
    return summarize(chapter, mutants, show, time.monotonic() - started)


def summarize(chapter, mutants: list[Mutant], show: bool, seconds: float) -> dict:
    """A chapter's run: outcome counts, score, survivors and stale equivalents (mutants that
    survived on a line of given code count as given; listed equivalents as equivalent)."""
    source = (REPO / "solutions" / chapter.id / f"{chapter.module}.py").read_text()
    stub = (REPO / "exercises" / chapter.id / f"{chapter.module}.py").read_text()
    given = given_lines(stub, source, {t.name for t in chapter.tasks})
    known = equivalents(chapter)
    for m in mutants:
        if m.outcome == "survived" and m.line in given:
            m.outcome = "given"
        elif m.outcome == "survived" and m.key in known:
            m.outcome = "equivalent"
    keys = {m.key for m in mutants}
    stale = sorted(
        k
        for k in known
        if k not in keys or k not in {m.key for m in mutants if m.outcome == "equivalent"}
    )
    outcomes = ("killed", "survived", "equivalent", "given")
    counts = {o: sum(m.outcome == o for m in mutants) for o in outcomes}
    effective = len(mutants) - counts["equivalent"] - counts["given"]
    score = counts["killed"] / effective if effective else 1.0
    summary = {
        "chapter": chapter.id,
        "generated": len(mutants),
        **counts,
        "score": round(score, 4),
        "seconds": round(seconds, 1),
        "survivors": [m.key for m in mutants if m.outcome == "survived"],
        "stale_equivalents": stale,
    }
    if show:
        for m in mutants:
            if m.outcome == "survived":
                print(f"--- survived: {m.key}  [{m.operator}]", file=sys.stderr)
    return summary | {"mutants": [asdict(m) | {"code": None} for m in mutants]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="default: every chapter")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=60, help="seconds per test")
    parser.add_argument("--json", type=Path, help="write every mutant's outcome here")
    parser.add_argument("--show", action="store_true", help="list survivors on stderr")
    parser.add_argument(
        "--only", help="comma-separated definitions: mutate just these (e.g. after changing them)"
    )
    parser.add_argument(
        "--changed",
        action="store_true",
        help="only definitions changed since the chapter's baseline; exit 1 on a new survivor",
    )
    parser.add_argument(
        "--budget", type=int, default=0, help="with --changed: at most this many mutants in all"
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="keep each complete chapter run as its baseline (tests/mutation_baseline.json); "
        "with --only, the run of those definitions replaces just their part of it",
    )
    args = parser.parse_args(argv)
    if args.changed:
        return check_changed(args)
    import torch

    torch.set_num_threads(1)
    from harness import index

    chosen = args.chapters or list(index.chapters())
    results = []
    print("| chapter | generated | killed | survived | equivalent | given | score | s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for chapter in chosen:
        only = set(args.only.split(",")) if args.only else None
        r = run_chapter(chapter, args.jobs, args.timeout, args.show, only)
        results.append(r)
        print(
            f"| {r['chapter']} | {r['generated']} | {r['killed']} | {r['survived']} | "
            f"{r['equivalent']} | {r['given']} | {r['score']:.1%} | {r['seconds']:.0f} |",
            flush=True,
        )
        for key in r["survivors"]:
            print(f"  survived: {key}", file=sys.stderr)
        for key in r["stale_equivalents"]:
            print(f"  listed as equivalent but not a surviving mutant: {key}", file=sys.stderr)
        if args.record:
            import mutation_baseline

            if args.only:  # every mutant of these definitions ran: their part of the baseline
                mutation_baseline.record_definitions(index.chapter(chapter), only, r)
            else:
                mutation_baseline.record(index.chapter(chapter), r)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


def _mutants_at(chapter_id: str, source: str, changed: set[str], sites: list[Site]) -> list:
    return [(chapter_id, m) for m in mutants_of(source, changed, sites)]


def changed_sample(chapters: list[str], budget: int, jobs: int = 1) -> dict[str, list[Mutant]]:
    """Chapter -> the mutants of its changed definitions; with a budget, a fixed sample of
    at most ``budget`` of them in all, chosen by a hash of each mutation's place (so the same
    change always draws the same mutants). Only the sample is made: making every mutant of
    the changed definitions (a walk of the module each) cost CI more than running them."""
    import hashlib

    import mutation_baseline

    from harness import index

    sources, candidates = {}, []
    for chapter_id in chapters:
        chapter = index.chapter(chapter_id)
        changed = mutation_baseline.changed_definitions(chapter)
        if changed:
            source = (REPO / "solutions" / chapter.id / f"{chapter.module}.py").read_text()
            sources[chapter_id] = (source, set(changed))
            candidates += [
                (hashlib.sha256(f"{chapter_id}|{site.place}".encode()).digest(), chapter_id, site)
                for site in mutation_sites(source, set(changed))
            ]
    candidates.sort(key=lambda c: c[0])
    found: list[tuple[str, Mutant]] = []
    start, step = 0, (budget + budget // 2) if budget else len(candidates)
    # some places make no mutant (a duplicate, or a change of wording only): draw on
    with multiprocessing.get_context("fork").Pool(max(1, jobs)) as pool:
        while start < len(candidates) and (not budget or len(found) < budget):
            part = candidates[start : start + step]
            start += step
            work = [
                (cid, *sources[cid], [site for _, c, site in part if c == cid])
                for cid in dict.fromkeys(c for _, c, _ in part)
            ]
            made = {
                (c, m.operator, m.occurrence): m
                for pairs in pool.starmap(_mutants_at, work)
                for c, m in pairs
            }
            for _, cid, site in part:
                mutant = made.get((cid, site.operator, site.occurrence))
                if mutant is not None:
                    found.append((cid, mutant))
    if budget:
        found = found[:budget]
    sample: dict[str, list[Mutant]] = {}
    for chapter_id, mutant in found:
        sample.setdefault(chapter_id, []).append(mutant)
    return sample


def check_changed(args) -> int:
    """Run the mutants of what changed since each chapter's baseline; 1 if one survives
    that the baseline did not accept."""
    import torch

    torch.set_num_threads(1)
    import mutation_baseline

    from harness import index

    chosen = args.chapters or list(index.chapters())
    sample = changed_sample(chosen, args.budget, args.jobs)
    total = sum(len(k) for k in sample.values())
    print(f"{total} mutants of changed definitions in {len(sample)} chapters", flush=True)
    new, unmeasured = [], []
    baseline = mutation_baseline.load()
    chapters = {chapter_id: index.chapter(chapter_id) for chapter_id in sample}
    # one pool for every chapter's mutants: a chapter's few mutants alone would leave jobs idle
    run_mutants([(chapters[c], m) for c, ms in sample.items() for m in ms], args.jobs, args.timeout)
    for chapter_id, chosen_mutants in sample.items():
        r = summarize(chapters[chapter_id], chosen_mutants, args.show, 0.0)
        accepted = mutation_baseline.accepted_survivors(chapter_id)
        fresh = [f"{chapter_id}: {k}" for k in r["survivors"] if k not in accepted]
        print(
            f"  {chapter_id}: {len(chosen_mutants)} run, {r['killed']} killed, {len(fresh)} new survivors"
        )
        # a chapter never measured completely has no accepted survivors to compare with:
        # its survivors are shown, and fail nothing until its first complete run
        (new if chapter_id in baseline else unmeasured).extend(fresh)
    if unmeasured:
        print("Survivors in chapters without a complete run yet (run `nox -s mutants -- chNN")
        print("--record` to measure one):")
        print("\n".join(f"  {k}" for k in unmeasured))
    if new:
        print("Mutants that no test kills (a test grew weaker, or a new equivalent to argue in")
        print("grader/bugzoo/chNN/equivalent_mutants.toml):")
        print("\n".join(f"  {k}" for k in new))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
