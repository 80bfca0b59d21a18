"""Pairs of submissions whose code for one chapter is unusually alike, and submissions
that are copies of the reference solution, judged against the chapter's honest pairs.

How alike: each module is put in its canonical form (``grader/canonical.py``: layout,
comments, docstrings, names, the order of functions and of commutative operands, the
direction of comparisons and statements that do nothing are undone, so a copy run through
a script reads as its original), then fingerprinted (``grader/fingerprint.py``: every
8-token k-gram, the starter code's left out). A pair's share on each side is the share
of that side's own tokens found in the other; its score is the larger share.

Flagged: a pair whose score reaches its chapter's flag level (``Rule``), the highest of

- ``FLOOR``: above the most alike that correct alternatives of this course have been
  measured to the reference (0.72, ch03's ``addmm_forward_zeroed_grads.py``, on the two
  functions it rewrites; 0.62 for a whole module written without sight of it, ch05's);
- the chapter's own honest pairs plus ``MARGIN``: the reference against each correct
  alternative in ``grader/alternatives/chNN/`` (the whole module for
  ``written_independently.py``; for the others, the functions the alternative writes
  anew against the reference's same functions), those with ``MIN_TOKENS`` matching
  tokens (a smaller pair could not be flagged);
- the class's own pairs: their median plus ``SPREADS`` robust standard deviations
  (1.4826 x the median absolute deviation), when at least ``CLASS_FROM`` students
  submitted: a chapter the whole class writes alike flags only the outliers;

and never above ``CEILING``, so a copy that survives every disguise is flagged in any
chapter. At least ``MIN_TOKENS`` tokens must match. Every submission is also compared
with the reference solution (when the grader has it), and a pair of students who are
no more alike than each is to the reference (``SOURCE_MARGIN``) says so: the reference
is then their likely common source, not one of the two.

It replaces copydetect (which needs pygments, and blanks every name, so that solutions
built from the same few PyTorch calls look alike). Measured on every chapter's canonical
text: copydetect gives a copy with ``print(end="")`` after every statement 45% to 79% of
the reference, the whole modules written independently up to 54% and the other
alternatives up to 74%, so no level separates them; these fingerprints give such copies
80% to 94%, the independent modules at most 62% and the other alternatives at most 72%.
A copy the canonical form fully undoes scores 100% with either (``tests/
bench_similarity.py`` prints the table).
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import multiprocessing
import os
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader import canonical, escape, fingerprint, journal
from harness import index
from harness.target import REPO

FLOOR = 0.75
MARGIN = 0.1
SPREADS = 4.0
CLASS_FROM = 10  # students, for the class's own distribution to count
CEILING = 0.9
MIN_TOKENS = 80  # matching tokens (about 6 lines): not two one-liners everyone writes alike
SOURCE_MARGIN = 0.02  # a pair this much more alike than each is to the reference has its own source
SAMPLE = 3000  # pairs scored exactly for the class's distribution
PREFILTER = 1 / 3  # of the flag level: k-gram overlap below this is not scored exactly
REFERENCE = "(reference solution)"  # what a pair with the reference names as its b
PAIRS_SHOWN = 20  # per chapter in similarity.md
SUMMARY_SHOWN = 10  # in summary.md, all chapters together
PARALLEL_FROM = 64  # modules to canonicalise before it pays to start worker processes
# What the cached canonical texts depend on (ast.unparse's layout is the Python's).
VERSION = f"canonical 2, python {sys.version_info[0]}.{sys.version_info[1]}"


@dataclass(frozen=True)
class Pair:
    chapter: str
    a: str
    b: str  # a student, or REFERENCE
    share_a: float  # of a's own code, the share also found in b
    share_b: float
    tokens: int  # matching code, in tokens of the canonical form
    with_reference: bool = False  # b is the reference solution (named REFERENCE)
    # for two students: how alike each is to the reference solution (its score), if known
    reference_a: float | None = None
    reference_b: float | None = None

    @property
    def score(self) -> float:
        return max(self.share_a, self.share_b)

    @property
    def of_reference(self) -> bool:
        """Whether b is the reference solution."""
        return self.with_reference

    @property
    def through_reference(self) -> bool:
        """Whether the two students are no more alike than each is to the reference
        (within ``SOURCE_MARGIN``): the reference explains what they share."""
        if self.reference_a is None or self.reference_b is None:
            return False
        return self.score <= min(self.reference_a, self.reference_b) + SOURCE_MARGIN


@dataclass(frozen=True)
class Rule:
    """How a chapter's flag level was set."""

    chapter: str
    level: float
    basis: str  # which term set it, in words
    honest: float | None = None  # the most alike honest pair of the alternatives
    median: float | None = None  # of the class's pairs
    spread: float | None = None  # 1.4826 x their median absolute deviation
    reference: bool = False  # whether submissions were compared with the reference
    unreadable: tuple[str, ...] = ()  # students whose module does not parse: not compared

    def describe(self) -> str:
        parts = [f"flag level {self.level:.0%} ({self.basis})"]
        if self.honest is not None:
            parts.append(f"correct alternatives share up to {self.honest:.0%} with the reference")
        if self.median is not None:
            parts.append(
                f"the class's pairs: median {self.median:.0%}, robust spread {self.spread:.0%}"
            )
        if not self.reference:
            parts.append("no reference solution here to compare with")
        if self.unreadable:
            names = ", ".join(escape.md_text(s) for s in self.unreadable)
            parts.append(f"not compared, as their module does not parse: {names}")
        return "; ".join(parts)


@dataclass
class Similarity:
    pairs: list[Pair] = field(default_factory=list)  # flagged, most similar first
    compared: dict[str, int] = field(default_factory=dict)  # chapter -> submissions compared
    rules: dict[str, Rule] = field(default_factory=dict)  # chapter -> its flag level
    skipped: str = ""  # why nothing was compared, when so


def starter(chapter: index.Chapter) -> str:
    return _read(REPO / "exercises" / chapter.id / f"{chapter.module}.py")


def reference(chapter: index.Chapter) -> str:
    """The reference solution's module ("" where the grader runs without solutions)."""
    return _read(REPO / "solutions" / chapter.id / f"{chapter.module}.py")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _kept(path: Path | None, **expect) -> dict:
    """What an earlier run kept at ``path`` (a JSON object), if it carries ``expect``'s
    values; else nothing (no file, another version, or a damaged one)."""
    try:
        data = json.loads(path.read_text()) if path else None
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or any(data.get(k) != v for k, v in expect.items()):
        return {}
    return data


def _keep(path: Path | None, data: dict) -> None:
    """Keep ``data`` at ``path`` for a later run (where it can be written)."""
    if path is None:
        return
    try:
        journal.write_json_atomic(path, data)
    except OSError:
        pass  # no cache, no harm


def find(
    sources: dict[str, dict[str, str]],
    chapters: list[index.Chapter],
    cache: Path | None = None,
    lasting: Path | None = None,
) -> Similarity:
    """Flagged pairs per chapter. ``sources`` maps a student to ``{"chNN/<module>.py": code}``;
    ``cache`` (the run's journal folder) keeps each module's canonical text, the slow part,
    so that a rerun over 500 students redoes only the modules that changed; ``lasting``
    (the grader's per-user cache) keeps the honest pairs, the same for every class."""
    found = Similarity()
    for chapter in chapters:
        rel = f"{chapter.id}/{chapter.module}.py"
        codes = {s: files[rel] for s, files in sorted(sources.items()) if files.get(rel)}
        found.compared[chapter.id] = len(codes)
        path = cache / "similarity" / f"{chapter.id}.json" if cache else None
        course = lasting / "similarity" / f"course-{chapter.id}.json" if lasting else None
        canon = Canon(starter(chapter), path, course, (reference(chapter),))
        pairs, found.rules[chapter.id] = chapter_pairs(chapter, codes, canon, lasting)
        found.pairs += pairs
        canon.save()
    found.pairs.sort(key=lambda p: (-p.score, p.chapter, p.a, p.b))
    if not any(found.compared.values()):
        found.skipped = "no submission holds a module of the chapters graded"
    return found


class Canon:
    """The canonical text of each module of one chapter (whose starter code is
    ``starter``), by the module's hash, kept in a JSON file between runs (for the same
    starter code and canonical form); those of the course's own modules (``course``: the
    starter code, the reference) also in ``lasting``, a file that outlives output folders."""

    def __init__(
        self,
        starter: str,
        path: Path | None = None,
        lasting: Path | None = None,
        course: tuple[str, ...] = (),
    ) -> None:
        self.starter = starter
        self.keep = canonical.contract_names(self.starter)
        self.path, self.lasting = path, lasting
        self.course = {_key(code) for code in (starter, *course) if code}
        self.version = f"{VERSION}, starter {_key(self.starter)}"
        self.known: dict[str, str | None] = {}
        self.used: dict[str, str | None] = {}
        for kept in (lasting, path):
            try:
                self.known |= dict(_kept(kept, version=self.version).get("canonical", {}))
            except (TypeError, ValueError):
                pass  # a damaged file: canonicalised again

    def prepare(self, codes: list[str]) -> None:
        """Canonicalise the modules not cached yet, on every core when there are many."""
        todo = {_key(c): c for c in codes}
        todo = {k: c for k, c in todo.items() if k not in self.known}
        cores = min(os.cpu_count() or 1, 16)
        if len(todo) < PARALLEL_FROM or cores < 2 or not _spawnable():
            return  # canonicalised one by one when asked
        context = multiprocessing.get_context("spawn")  # no fork of a threaded grader
        try:
            with ProcessPoolExecutor(cores, mp_context=context) as pool:
                texts = list(pool.map(_canonical, todo.values(), [self.keep] * len(todo)))
        except Exception:  # no worker processes here: one by one when asked
            return
        self.known |= dict(zip(todo, texts))

    def __call__(self, code: str) -> str | None:
        key = _key(code)
        if key not in self.known:
            self.known[key] = _canonical(code, self.keep)
        self.used[key] = self.known[key]
        return self.used[key]

    def print(self, code: str, starter: frozenset[int]) -> fingerprint.Print | None:
        text = self(code)
        return None if text is None else fingerprint.make(text, starter)

    def save(self) -> None:
        course = {k: v for k, v in self.known.items() if k in self.course}
        for kept, texts in ((self.path, self.used), (self.lasting, course)):
            _keep(kept, {"version": self.version, "canonical": texts})


def _canonical(code: str, keep: frozenset[str]) -> str | None:
    return canonical.canonical(code, keep)


def _spawnable() -> bool:
    """Whether a spawned worker can import this program's main module again (not so for
    a script read from stdin)."""
    main = sys.modules.get("__main__")
    return (
        getattr(main, "__spec__", None) is not None
        or Path(getattr(main, "__file__", "") or "/nonexistent").is_file()
    )


def _key(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def chapter_pairs(
    chapter: index.Chapter,
    codes: dict[str, str],
    canon: Canon | None = None,
    lasting: Path | None = None,
) -> tuple[list[Pair], Rule]:
    """Flagged pairs among one chapter's submissions (student -> code), each student
    also against the reference solution; and the chapter's rule. The pairs are first
    found at ``FLOOR``, under which no level goes: only when one reaches it are the
    chapter's alternatives and the class's pairs measured (a run with nothing alike pays
    for neither)."""
    if not codes:
        return [], Rule(chapter.id, FLOOR, "the course-wide floor; no submission")
    canon = canon or Canon(starter(chapter))
    canon.prepare(list(codes.values()))
    start = _starter_kgrams(canon)
    every = {s: canon.print(code, start) for s, code in codes.items()}
    prints = {s: p for s, p in every.items() if p and p.tokens}
    unreadable = tuple(s for s, p in every.items() if p is None)
    ref_code = reference(chapter)
    ref = canon.print(ref_code, start) if ref_code else None
    students = sorted(prints)
    pairs = []
    for i, a in enumerate(students):
        for b in students[i + 1 :]:
            pairs += filter(None, [_flagged(chapter.id, a, prints[a], b, prints[b], FLOOR)])
        if ref is not None and ref.tokens:
            pair = _flagged(chapter.id, a, prints[a], REFERENCE, ref, FLOOR)
            pairs += [replace(pair, with_reference=True)] if pair else []
    if not pairs:
        basis = "the course-wide floor; no pair reached it, so nothing else was measured"
        return [], Rule(chapter.id, FLOOR, basis, reference=ref is not None, unreadable=unreadable)
    # an honest pair too small to be flagged says nothing of the level
    found = honest_pairs(chapter, canon, lasting)
    honest = [s for s, tokens in found.values() if tokens >= MIN_TOKENS]
    rule = rule_for(chapter.id, honest, class_scores(prints), ref is not None)
    rule = replace(rule, unreadable=unreadable)
    alike: dict[str, float] = {}  # student -> score against the reference

    def to_reference(student: str) -> float:
        if student not in alike:
            alike[student] = round(max(fingerprint.shares(prints[student], ref)[:2]), 3)
        return alike[student]

    kept = [p for p in pairs if p.score >= rule.level]
    if ref is not None:
        kept = [
            p
            if p.of_reference
            else replace(p, reference_a=to_reference(p.a), reference_b=to_reference(p.b))
            for p in kept
        ]
    return kept, rule


def _flagged(
    chapter: str, a: str, pa: fingerprint.Print, b: str, pb: fingerprint.Print, level: float
) -> Pair | None:
    """The pair of ``a`` and ``b`` if it reaches ``level``."""
    if fingerprint.overlap(pa, pb) < PREFILTER * level:
        return None
    share_a, share_b, tokens = fingerprint.shares(pa, pb)
    if max(share_a, share_b) < level or tokens < MIN_TOKENS:
        return None
    return Pair(chapter, a, b, round(share_a, 3), round(share_b, 3), tokens)


def _starter_kgrams(canon: Canon) -> frozenset[int]:
    text = canon(canon.starter) if canon.starter else None
    return frozenset(fingerprint.kgrams(text)) if text else frozenset()


def class_scores(prints: dict[str, fingerprint.Print]) -> list[float]:
    """Scores of the class's pairs: all of them, or a fixed sample of ``SAMPLE`` when
    there are more (chosen by the students' ids, so the same class gives the same
    sample)."""
    students = sorted(prints)
    pairs = [(a, b) for i, a in enumerate(students) for b in students[i + 1 :]]
    if len(pairs) > SAMPLE:
        pairs = sorted(pairs, key=lambda p: _key(f"{p[0]}\n{p[1]}"))[:SAMPLE]
    return [max(fingerprint.shares(prints[a], prints[b])[:2]) for a, b in pairs]


def honest_pairs(
    chapter: index.Chapter, canon: Canon, lasting: Path | None = None
) -> dict[str, tuple[float, int]]:
    """The chapter's honest pairs, by alternative: the score and the matching tokens of
    the reference against each correct alternative (``written_independently.py`` whole;
    any other on the definitions it writes anew, against the reference's same ones).
    Kept in ``lasting`` (a folder) for as long as those files and the canonical form stay
    the same: they are the same for every class."""
    ref = reference(chapter)
    if not ref:
        return {}
    alternatives = {path.stem: _read(path) for path in sorted(chapter.alternatives.glob("*.py"))}
    key = _key(json.dumps([canon.version, ref, alternatives], sort_keys=True))
    kept = lasting / "similarity" / f"honest-{chapter.id}.json" if lasting else None
    try:
        pairs = _kept(kept, key=key)["pairs"]
        return {name: (float(s), int(t)) for name, (s, t) in pairs.items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        pass  # not kept yet, or damaged: measured again
    start = _starter_kgrams(canon)
    found = {}
    for name, alternative in alternatives.items():
        if name != "written_independently":
            names = _definitions(alternative) & _definitions(ref)
            ref_part, alternative = _only(ref, names), _only(alternative, names)
        else:
            ref_part = ref
        a, b = canon.print(ref_part, start), canon.print(alternative, start)
        share_a, share_b, tokens = fingerprint.shares(a, b) if a and b else (0.0, 0.0, 0)
        found[name] = (max(share_a, share_b), tokens)
    _keep(kept, {"key": key, "pairs": found})
    return found


def _definitions(code: str) -> set[str]:
    try:
        return {n.name for n in ast.parse(code).body if isinstance(n, canonical.DEFINITIONS)}
    except SyntaxError:
        return set()


def _only(code: str, names: set[str]) -> str:
    """``code`` with its imports and the definitions named ``names``, nothing else."""
    tree = ast.parse(code)
    tree.body = [
        n
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        or (isinstance(n, canonical.DEFINITIONS) and n.name in names)
    ]
    return ast.unparse(tree)


def rule_for(chapter: str, honest: list[float], scores: list[float], ref: bool) -> Rule:
    """The chapter's flag level from the scores of its honest pairs and of its class's
    pairs."""
    terms = [(FLOOR, "the course-wide floor")]
    top = round(max(honest), 3) if honest else None
    if top is not None:
        terms.append((top + MARGIN, "set by the chapter's correct alternatives"))
    median = spread = None
    if len(scores) >= CLASS_FROM * (CLASS_FROM - 1) // 2:
        median = statistics.median(scores)
        spread = 1.4826 * statistics.median(abs(s - median) for s in scores)
        terms.append((median + SPREADS * spread, "set by the class's own pairs"))
        median, spread = round(median, 3), round(spread, 3)
    level, basis = max(terms)
    if level > CEILING:
        level, basis = CEILING, f"the ceiling; {basis} it would be {level:.0%}"
    return Rule(chapter, round(level, 3), basis, top, median, spread, ref)


def compare(chapter: str, a: str, code_a: str, b: str, code_b: str, boilerplate: str) -> Pair:
    """One pair's shares, flagged or not; ``boilerplate``: the starter code to leave out."""
    canon = Canon(boilerplate)
    start = _starter_kgrams(canon)
    pa, pb = canon.print(code_a, start), canon.print(code_b, start)
    if not (pa and pb):
        return Pair(chapter, a, b, 0.0, 0.0, 0)
    share_a, share_b, tokens = fingerprint.shares(pa, pb)
    return Pair(chapter, a, b, round(share_a, 3), round(share_b, 3), tokens)


# ---- reports ----------------------------------------------------------------------


def _name(results: dict, student: str) -> str:
    """The student as every output names them (the name as submitted), unescaped."""
    r = results.get(student)
    return r.shown if r is not None else student


def _grade(results: dict, student: str, chapter: str) -> str:
    r = results.get(student)
    if r is None:
        return "?"
    got, most = r.chapter_score(chapter)
    return f"{got}/{most}"


def _second(p: Pair, results: dict) -> tuple[str, str]:
    """The second side of a pair as a Markdown cell, and its grade."""
    if p.of_reference:
        return "*the reference solution*", "—"
    return escape.md_cell(_name(results, p.b)), _grade(results, p.b, p.chapter)


def _source(p: Pair) -> str:
    if p.of_reference:
        return "the reference"
    if p.reference_a is None or p.reference_b is None:
        return "—"
    alike = f"{p.reference_a:.0%} and {p.reference_b:.0%} alike to the reference"
    return f"the reference ({alike})" if p.through_reference else f"one of the two ({alike})"


def _row(p: Pair, results: dict, level: float) -> str:
    b, grade_b = _second(p, results)
    return (
        f"| {p.chapter} | {escape.md_cell(_name(results, p.a))} | "
        f"{_grade(results, p.a, p.chapter)} | {b} | "
        f"{grade_b} | {p.share_a:.0%} | {p.share_b:.0%} | {level:.0%} | {p.tokens} "
        f"| {_source(p)} |"
    )


HEADER = [
    "| chapter | student | grade | student | grade | of the first's code in the second "
    "| of the second's in the first | flag level | matching (tokens) | likely common source |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]


def _level(found: Similarity, chapter: str) -> float:
    rule = found.rules.get(chapter)
    return rule.level if rule else CEILING


def _listed(pairs: list[Pair]) -> tuple[list[Pair], int]:
    """The pairs worth a row: copies of the reference and pairs whose common source is
    one of the two; and how many pairs of students only share the reference's code."""
    shown = [p for p in pairs if not p.through_reference]
    return shown, len(pairs) - len(shown)


def summary_lines(found: Similarity, results: list) -> list[str]:
    """The section of ``summary.md``: the most similar pairs with both grades."""
    lines = ["## Similar submissions", ""]
    if found.skipped:
        return lines + [f"Skipped: {found.skipped}.", ""]
    if not found.pairs:
        return lines + [
            "No pair of submissions, and no submission and the reference solution, is "
            "unusually similar (starter code excluded).",
            "",
        ]
    by_student = {r.student: r for r in results}
    shown, through = _listed(found.pairs)
    copies = sum(p.of_reference for p in found.pairs)
    lines += [
        f"{copies} submission(s) flagged as alike to the reference solution and "
        f"{len(found.pairs) - copies} pair(s) of students flagged, each against its "
        "chapter's flag level (set from the chapter's correct alternatives and the class's "
        "own pairs; `_instructor/similarity.md` says how, per chapter). "
        + (
            f"{through} of the pairs are no more alike than each is to the reference, "
            "their likely common source (not listed here). "
            if through
            else ""
        )
        + "Similar is not proof: read the code.",
        "",
        *HEADER,
    ]
    lines += [_row(p, by_student, _level(found, p.chapter)) for p in shown[:SUMMARY_SHOWN]]
    if len(shown) > SUMMARY_SHOWN:
        lines.append(
            f"\n... and {len(shown) - SUMMARY_SHOWN} more pairs in "
            "`_instructor/similarity.md` and `_instructor/similarity.csv`."
        )
    return lines + [""]


def markdown(found: Similarity, results: list, chapters: list[str]) -> str:
    lines = ["# Similar submissions (instructor only)", ""]
    if found.skipped:
        return "\n".join(lines + [f"Skipped: {found.skipped}.", ""])
    lines += [
        "Per chapter, pairs of submissions, and submissions and the reference solution, "
        "whose code is unusually alike. Each module is first put in a canonical form "
        "(layout, comments, docstrings, names, the order of functions and of the operands "
        "of commutative operators, the direction of comparisons and statements that do "
        "nothing are undone), so a copy run through a disguising script still matches; the "
        "shares are of each side's own code (the chapter's starter code excluded) found in "
        "the other. A pair is flagged when a share reaches the chapter's flag level, set "
        "from its correct alternatives (their most alike pair with the reference, plus "
        f"{MARGIN * 100:.0f} points), from the class's own pairs (median + {SPREADS:g} robust standard "
        f"deviations) and never under {FLOOR:.0%} or over {CEILING:.0%}, with "
        f"{MIN_TOKENS}+ matching tokens. Every submission is also compared with the "
        "reference solution; when two students are no more alike than each is to it, the "
        "reference is their likely common source. Similar is not proof: read the two files.",
        "",
    ]
    by_student = {r.student: r for r in results}
    for chapter in chapters:
        if chapter not in found.compared:
            continue
        mine = [p for p in found.pairs if p.chapter == chapter]
        shown, through = _listed(mine)
        copies = sum(p.of_reference for p in mine)
        rule = found.rules.get(chapter)
        lines += [f"## {chapter}", ""]
        if rule is not None:
            lines += [f"{rule.describe()}.", ""]
        line = f"{found.compared[chapter]} submissions compared; "
        if not mine:
            line += "nothing flagged."
        else:
            line += (
                f"{copies} alike to the reference solution, "
                f"{len(mine) - copies} pair(s) of students flagged"
            )
            line += (
                f" ({through} of them no more alike than each is to the reference, their "
                "likely common source: in `similarity.csv` only)."
                if through
                else "."
            )
        lines += [line, ""]
        if shown:
            level = _level(found, chapter)
            lines += HEADER + [_row(p, by_student, level) for p in shown[:PAIRS_SHOWN]]
            if len(shown) > PAIRS_SHOWN:
                lines.append(f"\n... and {len(shown) - PAIRS_SHOWN} more in `similarity.csv`.")
            lines.append("")
    return "\n".join(lines) + "\n"


def csv_text(found: Similarity, results: list) -> str:
    by_student = {r.student: r for r in results}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        [
            "chapter",
            "student_a",
            "grade_a",
            "student_b",
            "grade_b",
            "share_a",
            "share_b",
            "tokens",
            "flag_level",
            "a_vs_reference",
            "b_vs_reference",
            "common_source",
        ]
    )
    for p in found.pairs:
        row = [
            p.chapter,
            _name(by_student, p.a),
            _grade(by_student, p.a, p.chapter),
            _name(by_student, p.b),
            "" if p.of_reference else _grade(by_student, p.b, p.chapter),
            p.share_a,
            p.share_b,
            p.tokens,
            _level(found, p.chapter),
            "" if p.reference_a is None else p.reference_a,
            "" if p.reference_b is None else p.reference_b,
            "reference" if p.of_reference or p.through_reference else "",
        ]
        writer.writerow([escape.csv_cell(cell) for cell in row])
    return buf.getvalue()


def write(folder: Path, found: Similarity, results: list, chapters: list[str]) -> None:
    """``similarity.md`` and ``similarity.csv`` in ``folder`` (the run's ``_instructor/``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "similarity.md").write_text(markdown(found, results, chapters))
    (folder / "similarity.csv").write_text(csv_text(found, results))


def sources_of(entries: dict[str, dict]) -> dict[str, dict[str, str]]:
    """The modules journaled with each student's entry (absent from older journals)."""
    return {s: e["sources"] for s, e in entries.items() if isinstance(e.get("sources"), dict)}
