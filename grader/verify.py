"""``python -m grader verify OUT [--sample N]``: do the same tests give the same grades?

Regrades a sample of OUT's students into a temporary folder, with the limits OUT was
graded under, and compares every test's verdict and points with OUT's journal (the
source of all of OUT's outputs). Refuses (exit 2), before regrading anything, when this
checkout's tests or environment lock differ from those OUT's provenance records: then
the grades are not expected to match. Exit 0 when every sampled grade is reproduced,
1 with the differences listed when one is not, 3 when the regrade itself could not
grade some test (the grader's own failure: run it again). Before regrading it says how
long that should take (what the sample took when it was graded, over ``--jobs``) and
names a sampled student whose grading took minutes.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

from grader import collect, escape, grade, journal, outputs, provenance, score
from grader.sandbox import Limits
from harness import index

SOURCE = grade.SOURCE  # journal meta: where OUT's submissions were read from
LONG = 120  # seconds: a sampled student whose grading took longer is named beforehand


def choose(students: list[str], sample: int, seed: int) -> list[str]:
    """``sample`` of ``students``, the same ones for the same seed (all when fewer)."""
    if sample >= len(students):
        return sorted(students)
    return sorted(random.Random(seed).sample(sorted(students), sample))


def _shown(entries: dict[str, dict], student: str) -> str:
    return escape.terminal(entries.get(student, {}).get("name") or student)


def estimate(entries: dict[str, dict], students: list[str], jobs: int) -> str:
    """How long regrading ``students`` should take, from how long their grading took
    (``execution_time`` in the journal), spread over ``jobs``; names the long ones."""
    took = {s: float(entries.get(s, {}).get("execution_time") or 0.0) for s in students}
    longest = max(took.values(), default=0.0)
    seconds = max(longest, sum(took.values()) / max(1, jobs))
    text = f"about {seconds:.0f} s with --jobs {jobs} (as long as their first grading took)"
    slow = [s for s, t in sorted(took.items(), key=lambda kv: -kv[1]) if t > LONG]
    if slow:
        text += "; " + ", ".join(f"{_shown(entries, s)} took {took[s]:.0f} s" for s in slow)
        text += " (its code runs long or hangs; --student chooses whom to regrade)"
    return text


def _verdicts(result: score.StudentResult) -> dict[str, tuple[str, int]]:
    return {t.spec.nodeid: (t.status, t.score) for t in result.tests}


def compare(before: score.StudentResult, after: score.StudentResult) -> list[str]:
    """One line per test whose verdict or points differ (not-graded ones excluded)."""
    old, new = _verdicts(before), _verdicts(after)
    lines = []
    for nodeid in sorted(set(old) | set(new)):
        a, b = old.get(nodeid), new.get(nodeid)
        if a == b or any(v and v[0] == "not_graded" for v in (a, b)):
            continue
        lines.append(
            f"{escape.terminal(before.shown)}: {nodeid}: graded {a[0] if a else 'absent'} "
            f"({a[1] if a else 0} pt), regraded {b[0] if b else 'absent'} ({b[1] if b else 0} pt)"
        )
    if before.total != after.total and lines:
        lines.append(f"{escape.terminal(before.shown)}: total {before.total} -> {after.total}")
    return lines


def main(
    out: Path,
    sample: int = 3,
    students: list[str] | None = None,
    submissions: Path | None = None,
    jobs: int = 1,
    seed: int = 0,
    stream=sys.stderr,
    no_confinement: bool = False,
) -> int:
    out = Path(out)
    from grader import isolation, preflight

    unconfined = preflight.confinement_problems(isolation.mode(), no_confinement)
    if unconfined:  # a regrade runs the class's code again, as grade does
        print(f"verify: refused: {unconfined[0]}", file=stream)
        return 2
    jr = journal.Journal(out / ".journal")
    run_meta, expected = jr.read_meta("run"), jr.read_meta("expected")
    prov = jr.read_meta(provenance.META)
    if run_meta is None or expected is None:
        print(f"verify: {out} holds no grader journal (was it a grader --out folder?)", file=stream)
        return 2
    if not prov:
        print(
            f"verify: {out} records no provenance (graded by an older grader): nothing to "
            "compare against",
            file=stream,
        )
        return 2
    known = index.chapters()
    missing = [c for c in run_meta["chapters"] if c not in known]
    if missing:
        print(f"verify: this checkout has no chapter(s) {', '.join(missing)}", file=stream)
        return 2
    chapters = [known[c] for c in run_meta["chapters"]]
    differ = provenance.mismatches(prov, chapters)
    if differ:
        print(
            "verify: refused, the grades are not expected to match: "
            + "; ".join(differ)
            + ". Check out the course version OUT was graded with "
            f"({(prov.get('course') or {}).get('commit') or 'see its summary.md'}) first.",
            file=stream,
        )
        return 2
    source = jr.read_meta(SOURCE) or {}
    where = Path(submissions or source.get("submissions") or "")
    if not (submissions or source.get("submissions")) or not where.exists():
        print(
            f"verify: the submissions OUT was graded from are not at {where or '(unknown)'}: "
            "pass --submissions PATH",
            file=stream,
        )
        return 2
    graded = jr.students()
    entries = {s: jr.get(s) or {} for s in graded}
    if students:
        # a student is named as submitted or by the grader's id
        by_name = {e.get("name") or s: s for s, e in entries.items()} | {s: s for s in graded}
        unknown = [s for s in students if s not in by_name]
        if unknown:
            print(f"verify: {escape.terminal(', '.join(unknown))} not graded in {out}", file=stream)
            return 2
        chosen = sorted({by_name[s] for s in students})
    else:
        chosen = choose(graded, sample, seed)
    found, _ = collect.discover(where, chapters, source.get("layout", "folders"))
    by_id = {s.student: s for s in found}
    subs, changed = [], []
    for student in chosen:
        sub, entry = by_id.get(student), jr.get(student) or {}
        if sub is None or not str(entry.get("key", "")).endswith(":" + sub.digest()):
            changed.append(student)
        else:
            subs.append(sub)
    for student in changed:
        print(
            f"verify: {_shown(entries, student)}'s submission is missing or changed since it "
            "was graded: not compared",
            file=stream,
        )
    if not subs:
        print("verify: no sampled submission can be compared", file=stream)
        return 2
    if prov.get("isolation") and prov["isolation"] != provenance_mode():
        print(
            f"verify: note: graded in isolation {prov['isolation']!r}, regrading in "
            f"{provenance_mode()!r}",
            file=stream,
        )
    specs = [score.TestSpec(**t) for t in expected["tests"]]
    limits = Limits(**prov["limits"])
    print(
        f"verify: regrading {len(subs)} of {len(graded)} students "
        f"({', '.join(escape.terminal(s.shown) for s in subs)}) with tests "
        f"{prov['tests_sha256'][:16]}; {estimate(entries, [s.student for s in subs], jobs)}",
        file=stream,
        flush=True,
    )
    try:
        with tempfile.TemporaryDirectory(prefix="grader-verify-") as tmp:
            run = grade.run_all(subs, Path(tmp), chapters, jobs, limits, progress_stream=stream)
    except grade.Interrupted as exc:
        print(f"verify: {exc.report()}", file=stream)
        return 130
    again = outputs.score_entries(run.specs, {s.student: run.entries[s.student] for s in subs})
    lines, inconclusive = [], []
    for after in again:
        before = score.score_student(after.student, specs, entries[after.student])
        lines += compare(before, after)
        if after.not_graded:
            inconclusive.append(after.shown)
    if lines:
        print(f"verify: DIFFERENT grades for the same tests ({len(lines)} line(s)):", file=stream)
        for line in lines:
            print(f"  {line}", file=stream)
        return 1
    if inconclusive:
        print(
            f"verify: {len(inconclusive)} student(s) had tests the regrade could not grade "
            f"({escape.terminal(', '.join(inconclusive))}): run verify again",
            file=stream,
        )
        return 3
    print(f"verify: the same grades for all {len(subs)} regraded students", file=stream)
    return 0


def provenance_mode() -> str:
    from grader import isolation

    return isolation.mode()
