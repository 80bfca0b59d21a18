"""The instructor's main job: collect → sandbox → run → score → outputs.

python -m grader grade SUBMISSIONS --out OUT [--chapters ch00,ch02] [--jobs N] [--shard K/N]

``run_all`` grades the submissions into OUT's journal (``grader/journal.py``), reusing
what an earlier run left there; ``grader/outputs.py`` writes every output from the
journal. ``main`` is the command: it refuses before any work a folder with nobody to
grade, names every entry it leaves out (and then exits 4), says where the preflight
stands before grading, lists what it wrote at the end, and on Ctrl-C says which
students were finished and which were not (the same command then grades the rest).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from grader import (
    collect,
    escape,
    isolation,
    journal,
    merge,
    outputs,
    preflight,
    provenance,
    regrade,
    run,
    sandbox,
    score,
)
from grader.sandbox import Limits
from harness import index

JOURNAL = ".journal"
SOURCE = "source"  # journal meta: where OUT's submissions were read from (for verify)
LEFT_OUT = 4  # the exit status when an entry of SUBMISSIONS was not graded as a student
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
NAMES_SHOWN = 20


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
    """Submissions done / total, elapsed and an estimate of the time left, on stderr; and,
    while one test of a submission runs long, who and which test (every ``LONG_S``)."""

    LONG_S = 60.0

    def __init__(self, total: int, reused: int, stream=sys.stderr) -> None:
        self.total, self.done, self.reused = total, 0, reused
        self.start = time.monotonic()
        self.stream = stream
        self.lock = threading.Lock()
        self.who: dict[int, str] = {}  # grading thread -> the student it grades
        self.stopped = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    @contextlib.contextmanager
    def grading(self, student: str):
        self.who[threading.get_ident()] = student
        try:
            yield
        finally:
            self.who.pop(threading.get_ident(), None)

    def _watch(self) -> None:
        while not self.stopped.wait(self.LONG_S):
            now = time.monotonic()
            for thread, (nodeid, since) in list(sandbox.RUNNING.items()):
                student = self.who.get(thread)
                if student is not None and now - since >= self.LONG_S:
                    with self.lock:
                        print(
                            f"  still grading {escape.terminal(student)}: {nodeid} has run "
                            f"{now - since:.0f} s",
                            file=self.stream,
                            flush=True,
                        )

    def close(self) -> None:
        self.stopped.set()

    def finished(self, student: str, result: score.StudentResult | None) -> None:
        with self.lock:
            self.done += 1
            elapsed = time.monotonic() - self.start
            left = elapsed / self.done * (self.total - self.done)
            what = f"{result.total}/{result.max_total} pts" if result else "not graded"
            print(
                f"[{self.done + self.reused}/{self.total + self.reused}] "
                f"{escape.terminal(student)}: {what} — "
                f"elapsed {elapsed:.0f} s, about {left:.0f} s left",
                file=self.stream,
                flush=True,
            )


def cache() -> journal.Journal:
    """A per-user cache of trusted collections, keyed like the journal (saves one
    ``import torch`` per fresh output folder)."""
    return journal.Journal(journal.user_cache())


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
    flags = list(sub.flags)
    if facts["unexpected_results"]:
        flags.append(f"sent {facts['unexpected_results']} result(s) for tests that do not exist")
    return {
        "key": entry_key(sub, plan),
        "student": sub.student,
        "name": sub.shown,
        "records": {n: r.to_dict() for n, r in records.items()},
        "notes": notes,
        "flags": flags,
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


class Interrupted(Exception):
    """Ctrl-C while grading: who was finished (journaled, so kept) and who was not."""

    def __init__(self, finished: list[str], unfinished: list[str]) -> None:
        super().__init__(f"interrupted: {len(finished)} finished, {len(unfinished)} not")
        self.finished, self.unfinished = finished, unfinished

    def report(self) -> str:
        return (
            f"interrupted: {len(self.finished)} submission(s) finished and kept"
            + (f" ({_some(self.finished)})" if self.finished else "")
            + f"; {len(self.unfinished)} not finished"
            + (f" ({_some(self.unfinished)})" if self.unfinished else "")
            + ". Run the same command again to grade just those."
        )


def _some(names: list[str]) -> str:
    shown = ", ".join(escape.terminal(n) for n in names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def _unfinished(entry: dict | None, key: str) -> dict | None | bool:
    """What a journal entry means for this run: True (reuse it), None (grade anew) or
    the entry itself (same key, but some tests were not graded: run just those)."""
    if entry is None or entry.get("key") != key:
        return None
    if any(r.get("outcome") == run.NOT_GRADED for r in entry.get("records", {}).values()):
        return entry
    return True


@dataclass
class Graded:
    """What ``run_all`` leaves for the outputs: the tests, each submission's journal
    entry, the journal as the last run over OUT left it (for regrade.md), the tests key."""

    specs: list[score.TestSpec]
    entries: dict[str, dict]
    before: regrade.Before | None
    key: str
    provenance: dict


def _preflight_state(plan: Plan) -> str:
    """Where the proof of the grader stands before grading: cached for this very
    environment, or to be run beside the first submissions."""
    files = preflight.reference_files(plan.chapters)
    if files is None:
        return "preflight: no reference solutions here (a student release): nothing to prove"
    cached = preflight.cached_score(cache(), plan.key, files)
    if cached:
        got, most = cached
        return (
            f"preflight: the grader was proven on this machine with these settings before "
            f"(the reference solutions scored {got}/{most}): cached"
        )
    return (
        "preflight: proving the grader on this machine (the reference solutions through "
        "the same sandbox) beside the first submissions; nothing is kept until it passes"
    )


def _kill_children() -> None:
    """End every process this grader started (each leads its own session: its group)
    and, with it, the student processes bound to it."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(me):
            pid = int(stat.parent.name)
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                    break
                except OSError:
                    continue


def run_all(
    submissions: list[collect.Submission],
    out: Path,
    chapters: list[index.Chapter],
    jobs: int = 1,
    limits: Limits | None = None,
    progress_stream=sys.stderr,
    gradebook: bool = False,
) -> Graded:
    """Grade ``submissions`` into ``out``'s journal, reusing journaled results.

    The preflight (``grader.preflight``) runs beside the first submissions; nothing is
    journaled until it has passed, and if it fails nothing is graded
    (``PreflightFailed``). Ctrl-C ends every process of the run and raises
    ``Interrupted`` (what was journaled stays: the next run grades the rest)."""
    out = Path(out)
    limits = limits or default_limits(jobs)
    plan = make_plan(chapters, limits)
    jr = journal.Journal(out / JOURNAL)
    before = regrade.snapshot(jr)  # the last run over this folder, for regrade.md
    jr.write_meta("run", {"chapters": [c.id for c in chapters]})
    prov = provenance.build(chapters, limits, isolation.mode(), plan.key)
    jr.write_meta(provenance.META, prov)
    state = {s.student: _unfinished(jr.get(s.student), entry_key(s, plan)) for s in submissions}
    todo = [s for s in submissions if state[s.student] is not True]
    finished = [s.shown for s in submissions if state[s.student] is True]
    if finished:
        print(
            f"{len(finished)} submissions unchanged since the last run: reused",
            file=progress_stream,
        )
    resumed = sum(isinstance(state[s.student], dict) for s in todo)
    if resumed:
        print(
            f"{resumed} submissions had tests not graded last time: grading just those",
            file=progress_stream,
        )
    if todo:
        print(_preflight_state(plan), file=progress_stream, flush=True)
        outputs.prepare(out, gradebook)  # its imports load while submissions are graded
    progress = Progress(len(todo), len(submissions) - len(todo), progress_stream)
    failures: dict[str, str] = {}
    stop = threading.Event()
    # A submission identical to the reference (the demo's complete student, a self-check
    # of solutions/) is graded first and its run doubles as the proof.
    reference = preflight.reference_files(chapters)
    twin = next(
        (s for s in todo if reference and s.files == reference and not state[s.student]), None
    )
    twin_records: Future | None = Future() if twin else None
    if twin:
        todo = [twin] + [s for s in todo if s is not twin]
    pool = ThreadPoolExecutor(max_workers=max(1, jobs) + 2)
    work = ThreadPoolExecutor(max_workers=max(1, jobs))
    parent = sandbox.parent_dir()
    tmp = parent.__enter__()
    specs_future = pool.submit(expected_specs, plan, jr)  # overlaps the first runs
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

    def said(future: Future) -> None:
        proof = None if future.cancelled() or future.exception() else future.result()
        if proof and proof.ok and proof.score and not stop.is_set():
            with progress.lock:  # a student's line from another thread must not cut it
                print(
                    f"preflight: passed, the reference solutions scored {proof.score[0]}/"
                    f"{proof.score[1]} here ({proof.mode} isolation)",
                    file=progress_stream,
                    flush=True,
                )

    proof_future.add_done_callback(said)

    def task(sub):
        if stop.is_set() or (proof_future.done() and not proof_future.result().ok):
            return  # interrupted, or refused: do not start more work
        previous = state[sub.student] if isinstance(state[sub.student], dict) else None
        try:
            with progress.grading(sub.shown):
                entry = grade_one(sub, plan, specs_future, tmp, previous)
            if sub is twin:
                twin_records.set_result({n: run.Record(**r) for n, r in entry["records"].items()})
        except score.CollectError as exc:
            if sub is twin:
                twin_records.set_exception(exc)
            raise
        except Exception as exc:  # a grader bug must not cost the other students
            if sub is twin:
                twin_records.set_exception(exc)
            if stop.is_set():
                return  # what an interrupted run cut short is no failure to report
            failures[sub.student] = f"{type(exc).__name__}: {exc}"[:500]
            with progress.lock:
                print(
                    f"error: grading {escape.terminal(sub.shown)} failed: {exc!r}",
                    file=progress_stream,
                )
                traceback.print_exc(file=progress_stream)
            progress.finished(sub.shown, None)
            return
        if stop.is_set() or not proof_future.result().ok:
            return  # cut by an interrupt, or graded on a machine that failed its proof
        jr.put(sub.student, entry)
        finished.append(sub.shown)
        progress.finished(sub.shown, score.score_student(sub.student, specs_future.result(), entry))

    try:
        futures = [work.submit(task, s) for s in todo]
        proof = proof_future.result()
        if not proof.ok:
            for f in futures:
                f.cancel()
        for f in futures:
            if not f.cancelled():
                f.result()
        specs = specs_future.result()
    except KeyboardInterrupt:
        stop.set()
        threading.excepthook = lambda args: None  # threads cut short end in silence
        for executor in (work, pool):
            executor.shutdown(wait=False, cancel_futures=True)
        _kill_children()
        sandbox.remove(tmp)
        done = set(finished)
        unfinished = [s.shown for s in submissions if s.shown not in done]
        raise Interrupted(list(finished), unfinished) from None
    finally:
        progress.close()
        if not stop.is_set():
            work.shutdown(cancel_futures=True)
            pool.shutdown(cancel_futures=True)
            parent.__exit__(None, None, None)
    if not proof.ok:
        raise PreflightFailed(proof)
    entries = {
        s.student: jr.get(s.student)
        or {
            "name": s.shown,
            "notes": [
                f"not graded: the grader failed on this submission "
                f"({failures.get(s.student, 'unknown')}); grading again retries it"
            ],
        }
        for s in submissions
    }
    for s in submissions:  # an entry reused from an older journal lacks these
        entries[s.student].setdefault("sources", _sources(s))
        entries[s.student].setdefault("name", s.shown)
        entries[s.student].setdefault("flags", list(s.flags))
    return Graded(specs, entries, before, plan.key, prov)


def write_outputs(out: Path, chapters: list[index.Chapter], graded: Graded, gradebook: bool):
    """Every output of a graded run (``grader.outputs``)."""
    return outputs.write(
        out,
        chapters,
        graded.specs,
        graded.entries,
        prov=graded.provenance,
        before=graded.before,
        key=graded.key,
        gradebook=gradebook,
    )


def grade(
    submissions: list[collect.Submission],
    out: Path,
    chapters: list[index.Chapter],
    jobs: int = 1,
    limits: Limits | None = None,
    progress_stream=sys.stderr,
    gradebook: bool = False,
) -> list[score.StudentResult]:
    """Grade ``submissions`` into ``out`` (``run_all``) and write every output; the
    scored results."""
    graded = run_all(submissions, out, chapters, jobs, limits, progress_stream, gradebook)
    return write_outputs(Path(out), chapters, graded, gradebook).results


def record_source(out: Path, submissions: Path, layout: str) -> None:
    """Remember where ``grade`` read the submissions (for a later ``verify``)."""
    journal.Journal(Path(out) / JOURNAL).write_meta(
        SOURCE, {"submissions": str(Path(submissions).resolve()), "layout": layout}
    )


def _left_out(found: collect.Found, stream) -> None:
    for name, why in found.left_out:
        print(f"error: {escape.terminal(name)!r} is not graded: {why}", file=stream)


def _hard_exit(code: int) -> None:
    """Leave now: threads still waiting on killed processes are not joined."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(
    submissions: Path | None,
    out: Path,
    chapters: list[str] | None,
    jobs: int,
    shard: tuple[int, int] | None = None,
    limits: dict | None = None,
    gradebook: bool | None = None,
    layout: str = "folders",
    no_confinement: bool = False,
) -> int:
    """``python -m grader grade``. ``gradebook``: None writes the nbgrader gradebook for
    the nbgrader layout only (it costs seconds); True or False decide. ``no_confinement``:
    grade even where student code cannot be confined (the instructor's explicit choice)."""
    try:
        return _main(
            submissions, out, chapters, jobs, shard, limits, gradebook, layout, no_confinement
        )
    except KeyboardInterrupt:  # before grading began, or after it ended
        print(
            "\ninterrupted: what was graded is kept; run the same command again to go on",
            file=sys.stderr,
        )
        return INTERRUPTED


def _main(
    submissions, out, chapters, jobs, shard, limits, gradebook, layout, no_confinement
) -> int:
    chosen = choose_chapters(chapters)
    if gradebook is None:
        gradebook = layout == "nbgrader"
    problems = preflight.environment_problems(chosen, isolation.mode(), gradebook)
    problems += preflight.confinement_problems(isolation.mode(), no_confinement)
    if problems:  # known before any test runs: say so at once
        print(
            f"error: {preflight.Proof(False, isolation.mode(), problems).refusal()}",
            file=sys.stderr,
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
        found = collect.find(Path(submissions), chosen, layout)
    except FileNotFoundError as exc:
        raise SystemExit(f"error: {exc}") from None
    for w in found.warnings:
        print(f"warning: {escape.terminal(w)}", file=sys.stderr)
    _left_out(found, sys.stderr)
    if not found.submissions:
        where = collect.submissions_dir(Path(submissions), layout)
        print(
            f"error: nobody to grade: {where} holds no student's folder or .zip"
            + (f" ({len(found.left_out)} entries left out, above)" if found.left_out else "")
            + "; each student is one folder or .zip shaped like exercises/ (chNN/<module>.py)"
            + (
                ""
                if layout == "nbgrader"
                else "; for an nbgrader course directory pass --layout nbgrader"
            ),
            file=sys.stderr,
        )
        return LEFT_OUT
    subs = merge.shard_of(found.submissions, *shard) if shard else found.submissions
    record_source(Path(out), Path(submissions), layout)
    print(
        f"grading {len(subs)} submissions on {', '.join(c.id for c in chosen)} with {jobs} job(s)"
        + (f" (shard {shard[0]}/{shard[1]} of {len(found.submissions)})" if shard else ""),
        file=sys.stderr,
    )
    run_limits = default_limits(jobs, **(limits or {}))
    try:
        graded = run_all(subs, Path(out), chosen, jobs, run_limits, gradebook=gradebook)
    except score.CollectError as exc:
        raise SystemExit(f"error: {exc}") from None
    except PreflightFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"\n{exc.report()}", file=sys.stderr)
        _hard_exit(INTERRUPTED)
    try:
        written = write_outputs(Path(out), chosen, graded, gradebook)
    except KeyboardInterrupt:
        print(
            "\ninterrupted while writing the outputs: every submission is graded and kept; "
            "run the same command again to write them (nothing is graded again)",
            file=sys.stderr,
        )
        return INTERRUPTED
    results = written.results
    print(f"wrote {len(results)} students' grades:", file=sys.stderr)
    for line in written.listing(Path(out)):
        print(f"  {line}", file=sys.stderr)
    code = 0
    unfinished = [r for r in results if r.not_graded]
    if unfinished:
        tests = sum(len(r.not_graded) for r in unfinished)
        print(
            f"warning: {tests} test(s) of {len(unfinished)} submission(s) were NOT GRADED "
            "(the grader's own failures, listed in grades_status.csv and summary.md; never "
            "counted against a student): run the same command again to grade just those",
            file=sys.stderr,
        )
        code = 3
    if found.left_out:
        print(
            f"error: {len(found.left_out)} entr(y/ies) of {submissions} were NOT graded as "
            "students (listed above, each with why): fix or remove them and run again",
            file=sys.stderr,
        )
        code = code or LEFT_OUT
    return code
