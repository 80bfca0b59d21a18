"""What a new grading run over an existing output folder changed: ``_instructor/regrade.md``.

``grade`` reuses a journaled result whose key still matches (``grader/journal.py``: the
tests digest, then a hash of the submission's modules), so a rerun grades again only
the submissions that changed, all of them when the tests, the grader, the limits or the
environment changed, and the tests an earlier run left not graded. Before it writes
anything, the run takes a ``snapshot`` of the journal as the last run left it; after,
``write`` scores both with their own list of tests and says which students' scores
moved, by how much and why, and which tests changed verdict (``regrade.csv`` has every
moved student). A first run over an empty folder writes neither.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from grader import escape, journal, score

SHOWN = 50  # moved students listed in regrade.md (all of them are in regrade.csv)
TESTS_SHOWN = 30  # (test, from, to) rows
TESTS_PER_STUDENT = 4


@dataclass
class Before:
    """The journal as the previous run left it."""

    key: str  # its tests digest
    specs: list[score.TestSpec]
    entries: dict[str, dict]


def snapshot(jr: journal.Journal) -> Before | None:
    """The previous run's tests and entries, or None when the folder holds no run."""
    expected = jr.read_meta("expected")
    if not (isinstance(expected, dict) and "key" in expected and "tests" in expected):
        return None
    entries = {s: e for s in jr.students() if (e := jr.get(s)) is not None}
    return Before(expected["key"], [score.TestSpec(**t) for t in expected["tests"]], entries)


@dataclass
class Move:
    student: str  # as every output names them (the name as submitted)
    before: tuple[int, int]  # total, max (0, 0) when new
    after: tuple[int, int]
    why: str
    tests: list[tuple[str, str, str]] = field(default_factory=list)  # nodeid, from, to

    @property
    def delta(self) -> int:
        return self.after[0] - self.before[0]


@dataclass
class Regrade:
    tests_changed: bool
    why_counts: Counter  # why each current submission was (or was not) graded again
    moves: list[Move]  # students whose score or some test's verdict changed
    gone: list[str]  # in the last run, not in this one


def _verdicts(result: score.StudentResult) -> dict[str, tuple[str, int]]:
    return {t.spec.nodeid: (t.status, t.score) for t in result.tests}


def _why(old: dict | None, new: dict | None) -> str:
    if old is None:
        return "new submission"
    old_key, new_key = str(old.get("key", ":")), str((new or {}).get("key", ":"))
    if old_key == new_key:
        if any(r.get("outcome") == "not_graded" for r in old.get("records", {}).values()):
            return "tests not graded last time"
        return "unchanged (reused)"
    old_tests, _, old_sub = old_key.partition(":")
    new_tests, _, new_sub = new_key.partition(":")
    reasons = []
    if old_sub != new_sub:
        reasons.append("submission changed")
    if old_tests != new_tests:
        reasons.append("tests changed")
    return " and ".join(reasons) or "graded again"


def diff(
    before: Before,
    tests_key: str,
    specs: list[score.TestSpec],
    entries: dict[str, dict],
    results: list[score.StudentResult],
) -> Regrade:
    """Compare the snapshot with this run's entries and scored results."""
    moves, why_counts = [], Counter()
    for result in results:
        old_entry = before.entries.get(result.student)
        why = _why(old_entry, entries.get(result.student))
        why_counts[why] += 1
        after = (result.total, result.max_total)
        if old_entry is None:
            moves.append(Move(result.shown, (0, 0), after, why))
            continue
        old = score.score_student(result.student, before.specs, old_entry)
        was, now = _verdicts(old), _verdicts(result)
        changed = [
            (nodeid, was.get(nodeid, ("absent", 0))[0], now.get(nodeid, ("absent", 0))[0])
            for nodeid in sorted(set(was) | set(now))
            if was.get(nodeid, ("absent", 0)) != now.get(nodeid, ("absent", 0))
        ]
        before_total = (old.total, old.max_total)
        if changed or before_total != after:
            moves.append(Move(result.shown, before_total, after, why, changed))
    gone = sorted(
        before.entries[s].get("name") or s
        for s in set(before.entries) - {r.student for r in results}
    )
    moves.sort(key=lambda m: (-abs(m.delta), m.student))
    return Regrade(before.key != tests_key, why_counts, moves, gone)


def _short(nodeid: str) -> str:
    path, _, name = nodeid.partition("::")
    kind = "hidden" if path.startswith("grader/hidden/") else "public"
    return f"{Path(path).parent.name} {kind} `{name}`"


def markdown(found: Regrade) -> str:
    lines = ["# Regrade: what changed since the last run over this folder", ""]
    if found.tests_changed:
        lines.append(
            "**The tests digest changed** (the tests, the grader's test process, the limits, "
            "the isolation mode or the environment): every submission was graded again."
        )
    else:
        lines.append("The tests digest is unchanged: only changed submissions were graded again.")
    lines += ["", "| submissions | why |", "| --- | --- |"]
    lines += [f"| {n} | {why} |" for why, n in sorted(found.why_counts.items())]
    if found.gone:
        names = ", ".join(escape.md_cell(n) for n in found.gone[:10]) + (
            f" and {len(found.gone) - 10} more" if len(found.gone) > 10 else ""
        )
        lines.append(f"| {len(found.gone)} | in the last run, not in this one: {names} |")
    lines.append("")
    moved = [m for m in found.moves if m.before != m.after]
    lines += [f"## Scores that moved ({len(moved)})", ""]
    if not moved:
        lines += ["No student's score moved.", ""]
    else:
        lines += [
            "| student | before | after | change | why | tests that changed verdict |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for m in moved[:SHOWN]:
            tests = ", ".join(f"{_short(n)} {a} → {b}" for n, a, b in m.tests[:TESTS_PER_STUDENT])
            if len(m.tests) > TESTS_PER_STUDENT:
                tests += f" and {len(m.tests) - TESTS_PER_STUDENT} more"
            lines.append(
                f"| {escape.md_cell(m.student)} | {m.before[0]}/{m.before[1]} | {m.after[0]}/{m.after[1]} | "
                f"{m.delta:+d} | {m.why} | {tests} |"
            )
        if len(moved) > SHOWN:
            lines.append(f"\n... and {len(moved) - SHOWN} more students in `regrade.csv`.")
        lines.append("")
    verdicts = Counter((n, a, b) for m in found.moves for n, a, b in m.tests)
    lines += [f"## Tests that changed verdict ({len({n for n, _, _ in verdicts})})", ""]
    if not verdicts:
        return "\n".join(lines + ["No test changed verdict for any student.", ""]) + "\n"
    lines += ["| test | from | to | students |", "| --- | --- | --- | --- |"]
    ordered = sorted(verdicts.items(), key=lambda kv: (-kv[1], kv[0]))
    for (nodeid, a, b), n in ordered[:TESTS_SHOWN]:
        lines.append(f"| {_short(nodeid)} | {a} | {b} | {n} |")
    if len(ordered) > TESTS_SHOWN:
        lines.append(f"\n... and {len(ordered) - TESTS_SHOWN} more (test, change) rows.")
    return "\n".join(lines + [""]) + "\n"


def csv_text(found: Regrade) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["student", "before", "after", "max_before", "max_after", "why", "tests"])
    for m in found.moves:
        tests = "; ".join(f"{n}: {a} -> {b}" for n, a, b in m.tests)
        row = [m.student, m.before[0], m.after[0], m.before[1], m.after[1], m.why, tests]
        writer.writerow([escape.csv_cell(cell) for cell in row])
    return buf.getvalue()


def write(folder: Path, found: Regrade) -> list[Path]:
    """``regrade.md`` and ``regrade.csv`` in ``folder`` (the run's ``_instructor/``);
    returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "regrade.md").write_text(markdown(found), encoding="utf-8")
    (folder / "regrade.csv").write_text(csv_text(found), encoding="utf-8")
    return [folder / "regrade.md", folder / "regrade.csv"]
