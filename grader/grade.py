"""The instructor's main job: collect → sandbox → run → score → report/export.

python -m grader grade SUBMISSIONS --out OUT [--chapters ch00,ch02] [--jobs N] [--shard K/N]
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from grader import (
    collect,
    isolation,
    journal,
    merge,
    preflight,
    provenance,
    regrade,
    report,
    run,
    sandbox,
    score,
)
from grader.sandbox import Limits
from harness import index

JOURNAL = ".journal"


@dataclass(frozen=True)
class Plan:
    chapters: list[index.Chapter]
    limits: Limits
    key: str  # tests digest


def choose_chapters(names: list[str] | None) -> list[index.Chapter]:
    """The chosen chapters in course order (all that exist when none are named)."""
    known = index.chapters()
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown chapter(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [c for cid, c in known.items() if cid in names]


def default_limits(jobs: int, **overrides) -> Limits:
    # One torch thread per job: the course's tensors are tiny, and more threads than free
    # cores make small ops 10-20x slower on a busy machine (two processes per job share
    # the cores in turn anyway).
    threads = 1
    fields = {k: v for k, v in overrides.items() if v is not None}
    return Limits(threads=threads, **fields)


class Progress:
    """Submissions done / total, elapsed and an estimate of the time left, on stderr."""

    def __init__(self, total: int, reused: int, stream=sys.stderr) -> None:
        self.total, self.done, self.reused = total, 0, reused
        self.start = time.monotonic()
        self.stream = stream
        self.lock = threading.Lock()

    def finished(self, student: str, result: score.StudentResult | None) -> None:
        with self.lock:
            self.done += 1
            elapsed = time.monotonic() - self.start
            left = elapsed / self.done * (self.total - self.done)
            what = f"{result.total}/{result.max_total} pts" if result else "done"
            print(
                f"[{self.done + self.reused}/{self.total + self.reused}] {student}: {what} — "
                f"elapsed {elapsed:.0f} s, about {left:.0f} s left",
                file=self.stream,
                flush=True,
            )


def cache() -> journal.Journal:
    """A per-user cache of trusted collections, keyed like the journal (saves one
    ``import torch`` per fresh output folder)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return journal.Journal(base / "pytorch-course-grader")


def make_plan(chapters: list[index.Chapter], limits: Limits) -> Plan:
    """The tests, limits and environment a grade depends on, as one key: a journaled
    result is reused only under the same key (same isolation mode, interpreter and
    package versions included)."""
    settings = {
        "chapters": [c.id for c in chapters],
        "limits": asdict(limits) | {"threads": 0},
        "environment": preflight.environment(),
    }
    return Plan(chapters, limits, journal.tests_digest(chapters, settings))


def cached_specs(plan: Plan) -> list[dict]:
    """The plan's trusted collection from the per-user cache, collected (and cached)
    when it is not there yet."""
    name = f"expected-{plan.key[:40]}"
    cached = cache().read_meta(name)
    if not (cached and cached.get("key") == plan.key):
        specs = score.collect_expected(plan.chapters)
        cached = {"key": plan.key, "tests": [s.to_dict() for s in specs]}
        try:
            cache().write_meta(name, cached)
        except OSError:
            pass  # no cache, no harm
    return cached["tests"]


def expected_specs(plan: Plan, jr: journal.Journal) -> list[score.TestSpec]:
    """The tests every submission is scored on: from the journal, the cache, or a
    trusted collect-only run of our own test files."""
    cached = jr.read_meta("expected")
    if not (cached and cached.get("key") == plan.key):
        cached = {"key": plan.key, "tests": cached_specs(plan)}
    jr.write_meta("expected", cached)
    return [score.TestSpec(**t) for t in cached["tests"]]


def grade_one(
    sub: collect.Submission, plan: Plan, specs: Future, tmp: Path, previous: dict | None = None
) -> dict:
    """Run one submission and return its journal entry. With ``previous`` (its entry
    under the same key), only the tests it left not graded run again."""
    t0 = time.monotonic()
    only = None
    if previous:
        only = [n for n, r in previous["records"].items() if r["outcome"] == run.NOT_GRADED]
    records, facts = run.grade_submission(
        sub.files, plan.chapters, specs, plan.limits, tmp_root=tmp, only=only
    )
    if previous:
        records = {n: run.Record(**r) for n, r in previous["records"].items()} | records
    notes = list(sub.notes)
    if facts["unexpected_results"]:
        notes.append(f"{facts['unexpected_results']} results for unknown tests were ignored")
    if facts["runs"] > 1:
        notes.append(f"the test process had to be restarted {facts['runs'] - 1} time(s)")
    return {
        "key": entry_key(sub, plan),
        "student": sub.student,
        "records": {n: r.to_dict() for n, r in records.items()},
        "notes": notes,
        # the modules themselves, for the similarity report (merged shards have them too)
        "sources": _sources(sub),
        "execution_time": round(
            time.monotonic() - t0 + (previous or {}).get("execution_time", 0.0), 3
        ),
    }


def _sources(sub: collect.Submission) -> dict[str, str]:
    return {rel: data.decode("utf-8", "replace") for rel, data in sub.files.items()}


def entry_key(sub: collect.Submission, plan: Plan) -> str:
    return f"{plan.key}:{sub.digest()}"


class PreflightFailed(Exception):
    """The grader could not prove itself on this machine: nothing was graded."""

    def __init__(self, proof: preflight.Proof) -> None:
        super().__init__(proof.refusal())
        self.proof = proof


def _unfinished(entry: dict | None, key: str) -> dict | None | bool:
    """What a journal entry means for this run: True (reuse it), None (grade anew) or
    the entry itself (same key, but some tests were not graded: run just those)."""
    if entry is None or entry.get("key") != key:
        return None
    if any(r.get("outcome") == run.NOT_GRADED for r in entry.get("records", {}).values()):
        return entry
    return True


def grade(
    submissions: list[collect.Submission],
    out: Path,
    chapters: list[index.Chapter],
    jobs: int = 1,
    limits: Limits | None = None,
    progress_stream=sys.stderr,
    gradebook: bool = True,
) -> list[score.StudentResult]:
    """Grade ``submissions`` into ``out``, reusing journaled results; write every output.

    The preflight (``grader.preflight``) runs beside the first submissions; nothing is
    journaled until it has passed, and if it fails nothing is graded
    (``PreflightFailed``)."""
    out = Path(out)
    limits = limits or default_limits(jobs)
    plan = make_plan(chapters, limits)
    jr = journal.Journal(out / JOURNAL)
    before = regrade.snapshot(jr)  # the last run over this folder, for regrade.md
    jr.write_meta("run", {"chapters": [c.id for c in chapters]})
    jr.write_meta(provenance.META, provenance.build(chapters, limits, isolation.mode(), plan.key))
    state = {s.student: _unfinished(jr.get(s.student), entry_key(s, plan)) for s in submissions}
    todo = [s for s in submissions if state[s.student] is not True]
    progress = Progress(len(todo), len(submissions) - len(todo), progress_stream)
    if len(todo) < len(submissions):
        print(
            f"{len(submissions) - len(todo)} submissions unchanged since the last run: reused",
            file=progress_stream,
        )
    resumed = sum(isinstance(state[s.student], dict) for s in todo)
    if resumed:
        print(
            f"{resumed} submissions had tests not graded last time: grading just those",
            file=progress_stream,
        )
    failures: dict[str, str] = {}
    # A submission identical to the reference (the demo's complete student, a self-check
    # of solutions/) is graded first and its run doubles as the proof.
    reference = preflight.reference_files(chapters)
    twin = next(
        (s for s in todo if reference and s.files == reference and not state[s.student]), None
    )
    twin_records: Future | None = Future() if twin else None
    if twin:
        todo = [twin] + [s for s in todo if s is not twin]
    with ThreadPoolExecutor(max_workers=max(1, jobs) + 2) as pool:
        specs_future = pool.submit(expected_specs, plan, jr)  # overlaps the first runs
        with sandbox.parent_dir() as tmp:
            proof_future = pool.submit(
                preflight.prove,
                chapters,
                specs_future,
                limits,
                plan.key,
                tmp,
                cache(),
                gradebook,
                twin_records,
            )
            work = ThreadPoolExecutor(max_workers=max(1, jobs))

            def task(sub):
                if proof_future.done() and not proof_future.result().ok:
                    return  # refused: do not start more work
                previous = state[sub.student] if isinstance(state[sub.student], dict) else None
                try:
                    entry = grade_one(sub, plan, specs_future, tmp, previous)
                    if sub is twin:
                        twin_records.set_result(
                            {n: run.Record(**r) for n, r in entry["records"].items()}
                        )
                except score.CollectError as exc:
                    if sub is twin:
                        twin_records.set_exception(exc)
                    raise
                except Exception as exc:  # a grader bug must not cost the other students
                    if sub is twin:
                        twin_records.set_exception(exc)
                    failures[sub.student] = f"{type(exc).__name__}: {exc}"[:500]
                    print(f"error: grading {sub.student} failed: {exc!r}", file=progress_stream)
                    traceback.print_exc(file=progress_stream)
                    progress.finished(sub.student, None)
                    return
                if not proof_future.result().ok:
                    return  # nothing graded on a machine that failed its proof is kept
                jr.put(sub.student, entry)
                progress.finished(
                    sub.student, score.score_student(sub.student, specs_future.result(), entry)
                )

            futures = [work.submit(task, s) for s in todo]
            proof = proof_future.result()
            if not proof.ok:
                for f in futures:
                    f.cancel()
            for f in futures:
                if not f.cancelled():
                    f.result()
            work.shutdown()
        specs = specs_future.result()
    if not proof.ok:
        raise PreflightFailed(proof)
    if proof.score:
        print(
            f"preflight: the reference solutions scored {proof.score[0]}/{proof.score[1]} "
            f"here ({proof.mode} isolation)",
            file=progress_stream,
        )
    entries = {
        s.student: jr.get(s.student)
        or {
            "notes": [
                f"not graded: the grader failed on this submission "
                f"({failures.get(s.student, 'unknown')}); grading again retries it"
            ]
        }
        for s in submissions
    }
    for s in submissions:  # an entry reused from an older journal lacks its modules
        entries[s.student].setdefault("sources", _sources(s))
    results = merge.write_outputs(out, chapters, specs, entries, gradebook=gradebook)
    if before is not None:
        changes = regrade.diff(before, plan.key, specs, entries, results)
        regrade.write(out / report.INSTRUCTOR, changes)
    return results


def main(
    submissions: Path | None,
    out: Path,
    chapters: list[str] | None,
    jobs: int,
    shard: tuple[int, int] | None = None,
    limits: dict | None = None,
    gradebook: bool = True,
    layout: str = "folders",
    no_confinement: bool = False,
) -> int:
    chosen = choose_chapters(chapters)
    problems = preflight.environment_problems(chosen, isolation.mode(), gradebook)
    problems += preflight.confinement_problems(isolation.mode(), no_confinement)
    if problems:  # known before any test runs: say so at once
        print(
            f"error: {preflight.Proof(False, isolation.mode(), problems).refusal()}", file=sys.stderr
        )
        return 2
    if submissions is None:
        from grader import demo

        submissions = demo.build(Path(out) / "demo-submissions")
        layout = "folders"  # the demo's students are plain folders, whatever was asked
        print(
            f"no SUBMISSIONS given: grading the bundled demo students in {submissions}",
            file=sys.stderr,
        )
    try:
        subs, warnings = collect.discover(Path(submissions), chosen, layout)
    except FileNotFoundError as exc:
        raise SystemExit(f"error: {exc}") from None
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if shard:
        subs = merge.shard_of(subs, *shard)
    from grader import verify

    verify.record_source(Path(out), Path(submissions), layout)
    print(
        f"grading {len(subs)} submissions on {', '.join(c.id for c in chosen)} with {jobs} job(s)",
        file=sys.stderr,
    )
    try:
        results = grade(
            subs,
            Path(out),
            chosen,
            jobs,
            default_limits(jobs, **(limits or {})),
            gradebook=gradebook,
        )
    except score.CollectError as exc:
        raise SystemExit(f"error: {exc}") from None
    except PreflightFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {Path(out) / 'grades.csv'} ({len(results)} students)", file=sys.stderr)
    unfinished = [r for r in results if r.not_graded]
    if unfinished:
        tests = sum(len(r.not_graded) for r in unfinished)
        print(
            f"warning: {tests} test(s) of {len(unfinished)} submission(s) were NOT GRADED "
            "(the grader's own failures, listed in grades_status.csv and summary.md; never "
            "counted against a student): run the same command again to grade just those",
            file=sys.stderr,
        )
        return 3
    return 0
