"""Pairs of submissions whose code for one chapter is unusually alike.

The fingerprinting is not ours: it is ``copydetect`` (MIT licence; on PyPI since 2020,
with a Python API besides its command line; 0.5.0 needs only numpy, matplotlib, jinja2,
pygments and tqdm, all but tqdm already in this project, and is pure Python, so it
installs wherever the grader does). It implements MOSS's method,
winnowing over k-grams of a token stream in which pygments has replaced every
variable, function and class name by one letter and every string by another, so
renaming variables, rewording docstrings or reordering functions does not hide a copy;
fingerprints present in the starter code are dropped (its *boilerplate* option), so the
stub every student starts from (``exercises/chNN/<module>.py``) never counts as shared
work. It is chosen over writing our own (a fingerprinting scheme is easy to get subtly
wrong, and instructors know MOSS's numbers), over MOSS itself (a web service: student
code would leave the machine) and over JPlag (a Java program, a JVM on every grading
machine). If it is not installed, grading goes on and the report says it was skipped.

What is ours: which files are compared (one chapter's module, student against student),
the thresholds, a pre-filter that keeps 500 students fast, and the reports. The score of
a pair is copydetect's: for each of the two files, the share of its own (non-starter)
tokens that also appear in the other. A pair is flagged when either share reaches
``FLAG_AT`` and at least ``MIN_TOKENS`` tokens match. Independent correct solutions in
this course share a quarter (ch06a) to two thirds (ch07's attention: the same few PyTorch
calls in the same order) of their tokens; a copy with renamed variables, reworded
docstrings and reordered functions shares 94% or more (``tests/test_similarity.py``
measures both on seven chapters).

Hashes are Python's ``hash`` of each k-gram, salted per process; with every k-gram kept
(a winnowing window of 1, copydetect's default) the result does not depend on the salt.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import multiprocessing
import os
import sys
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from grader import journal
from harness import index
from harness.target import REPO

K = 25  # copydetect's noise threshold: matches shorter than this (filtered) many characters are noise
WINDOW = 1  # every k-gram is a fingerprint: exact, and independent of the hash salt
# The share of one file's own code found in the other that flags a pair: halfway between
# the most alike independent pair measured (ch07, 0.64 to 0.67) and the least alike
# disguised copy (0.94).
FLAG_AT = 0.8
MIN_TOKENS = 100  # and at least this much matching code (filtered characters)
# The pre-filter skips fragments that more than this many of the class wrote (MOSS skips
# passages found in more than 10 programs by default): code most students write alike
# is no sign of copying, and counting it would cost n² at 500 students.
COMMON = 10
COMMON_SHARE = 0.1
# A pair is compared in full once this share of its fragments (of the smaller file) are
# shared and rare: well below FLAG_AT, as a copy edited every few lines keeps its tokens
# but loses the k-grams that straddle each edit.
PREFILTER = FLAG_AT / 3
PAIRS_SHOWN = 20  # per chapter in similarity.md
SUMMARY_SHOWN = 10  # in summary.md, all chapters together
PARALLEL_FROM = 64  # modules to lex before it pays to start worker processes


@dataclass(frozen=True)
class Pair:
    chapter: str
    a: str
    b: str
    share_a: float  # of a's own code, the share also found in b
    share_b: float
    tokens: int  # matching code, in filtered characters

    @property
    def score(self) -> float:
        return max(self.share_a, self.share_b)


@dataclass
class Similarity:
    pairs: list[Pair] = field(default_factory=list)  # flagged, most similar first
    compared: dict[str, int] = field(default_factory=dict)  # chapter -> submissions compared
    skipped: str = ""  # why nothing was compared, when so


def starter(chapter: index.Chapter) -> str:
    path = REPO / "exercises" / chapter.id / f"{chapter.module}.py"
    try:
        return path.read_text()
    except OSError:
        return ""


def find(
    sources: dict[str, dict[str, str]],
    chapters: list[index.Chapter],
    cache: Path | None = None,
) -> Similarity:
    """Flagged pairs per chapter. ``sources`` maps a student to ``{"chNN/<module>.py": code}``;
    ``cache`` (the run's journal folder) keeps each module's token stream, the slow part
    (pygments), so that a rerun over 500 students lexes only the modules that changed."""
    try:
        import copydetect  # noqa: F401
    except ImportError as exc:
        return Similarity(skipped=f"copydetect is not installed ({exc}); pip install copydetect")
    found = Similarity()
    for chapter in chapters:
        rel = f"{chapter.id}/{chapter.module}.py"
        codes = {s: files[rel] for s, files in sorted(sources.items()) if files.get(rel)}
        found.compared[chapter.id] = len(codes)
        tokens = Tokens(cache / "similarity" / f"{chapter.id}.json" if cache else None)
        found.pairs += chapter_pairs(chapter.id, codes, starter(chapter), tokens)
        tokens.save()
    found.pairs.sort(key=lambda p: (-p.score, p.chapter, p.a, p.b))
    return found


class Tokens:
    """copydetect's filtered token stream of each module, by the module's hash, kept in a
    JSON file between runs (for the same copydetect and pygments versions)."""

    def __init__(self, path: Path | None) -> None:
        from importlib.metadata import version

        self.path = path
        self.versions = f"copydetect {version('copydetect')}, pygments {version('pygments')}"
        self.known: dict[str, str] = {}
        self.used: dict[str, str] = {}
        if path is not None:
            try:
                data = json.loads(path.read_text())
                if data.get("versions") == self.versions:
                    self.known = dict(data["tokens"])
            except (OSError, ValueError, KeyError, TypeError):
                pass

    def prepare(self, codes: list[str]) -> None:
        """Lex the modules not cached yet, on every core when there are many."""
        todo = {_key(c): c for c in codes}
        todo = {k: c for k, c in todo.items() if k not in self.known}
        cores = min(os.cpu_count() or 1, 16)
        if len(todo) < PARALLEL_FROM or cores < 2 or not _spawnable():
            return  # lexed one by one when asked
        context = multiprocessing.get_context("spawn")  # no fork of a threaded grader
        try:
            with ProcessPoolExecutor(cores, mp_context=context) as pool:
                lexed = list(pool.map(_filtered, todo.values(), chunksize=8))
        except Exception:  # no worker processes here: lexed one by one when asked
            return
        self.known |= {k: f for k, f in zip(todo, lexed) if f is not None}

    def __call__(self, code: str) -> str | None:
        key = _key(code)
        if key not in self.known:
            filtered = _filtered(code)
            if filtered is None:
                return None
            self.known[key] = filtered
        self.used[key] = self.known[key]
        return self.used[key]

    def save(self) -> None:
        if self.path is None:
            return
        try:
            journal.write_json_atomic(self.path, {"versions": self.versions, "tokens": self.used})
        except OSError:
            pass  # no cache, no harm


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


def _filtered(code: str) -> str | None:
    """copydetect's token stream: names and strings blanked, comments and spaces gone."""
    from copydetect.utils import filter_code

    try:
        return filter_code(code, "module.py")[0]
    except Exception:  # code pygments cannot read is not compared
        return None


def _fingerprint(code: str, tokens: Tokens, drop=None):
    """copydetect's fingerprint of ``code``, built from its (cached) filtered tokens:
    hashing the filtered text unfiltered is what ``CodeFingerprint`` does after filtering."""
    from copydetect import CodeFingerprint

    filtered = tokens(code)
    if filtered is None:
        return None
    return CodeFingerprint("module.py", K, WINDOW, drop, filter=False, fp=io.StringIO(filtered))


def _starter_hashes(boilerplate: str, tokens: Tokens):
    import numpy as np

    fp = _fingerprint(boilerplate, tokens) if boilerplate else None
    return np.array(sorted(fp.hashes)) if fp and fp.hashes else None


def compare(chapter: str, a: str, code_a: str, b: str, code_b: str, boilerplate: str) -> Pair:
    """copydetect's verdict on one pair, flagged or not."""
    from copydetect import compare_files

    tokens = Tokens(None)
    drop = _starter_hashes(boilerplate, tokens)
    fa, fb = _fingerprint(code_a, tokens, drop), _fingerprint(code_b, tokens, drop)
    if not (fa and fb and fa.hashes and fb.hashes):
        return Pair(chapter, a, b, 0.0, 0.0, 0)
    overlap, (share_a, share_b), _ = compare_files(fa, fb)
    return Pair(chapter, a, b, round(float(share_a), 3), round(float(share_b), 3), int(overlap))


def chapter_pairs(
    chapter: str, codes: dict[str, str], boilerplate: str, tokens: Tokens | None = None
) -> list[Pair]:
    """Flagged pairs among one chapter's submissions (student -> code)."""
    from copydetect import compare_files

    tokens = tokens or Tokens(None)
    drop = _starter_hashes(boilerplate, tokens)
    tokens.prepare(list(codes.values()))
    prints = {s: fp for s, code in codes.items() if (fp := _fingerprint(code, tokens, drop))}
    prints = {s: fp for s, fp in prints.items() if fp.hashes}
    pairs = []
    for a, b in candidates(prints):
        overlap, (share_a, share_b), _ = compare_files(prints[a], prints[b])
        pair = Pair(chapter, a, b, round(float(share_a), 3), round(float(share_b), 3), int(overlap))
        if pair.score >= FLAG_AT and pair.tokens >= MIN_TOKENS:
            pairs.append(pair)
    return pairs


def candidates(prints: dict) -> list[tuple[str, str]]:
    """Pairs sharing enough fragments that few others wrote to be worth a full comparison."""
    holders: dict[int, list[str]] = defaultdict(list)
    for student, fp in prints.items():
        for h in fp.hashes:
            holders[h].append(student)
    common = max(COMMON, int(COMMON_SHARE * len(prints)))
    shared: Counter = Counter()
    for who in holders.values():
        if 1 < len(who) <= common:
            for i, a in enumerate(who):
                for b in who[i + 1 :]:
                    shared[(a, b)] += 1
    return sorted(
        (a, b)
        for (a, b), n in shared.items()
        if n >= PREFILTER * min(len(prints[a].hashes), len(prints[b].hashes))
    )


# ---- reports ----------------------------------------------------------------------


def _grade(results: dict, student: str, chapter: str) -> str:
    r = results.get(student)
    if r is None:
        return "?"
    got, most = r.chapter_score(chapter)
    return f"{got}/{most}"


def _row(p: Pair, results: dict) -> str:
    return (
        f"| {p.chapter} | {p.a} | {_grade(results, p.a, p.chapter)} | {p.b} | "
        f"{_grade(results, p.b, p.chapter)} | {p.share_a:.0%} | {p.share_b:.0%} | {p.tokens} |"
    )


HEADER = [
    "| chapter | student | grade | student | grade | of the first's code in the second "
    "| of the second's in the first | matching (chars) |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
]


def summary_lines(found: Similarity, results: list) -> list[str]:
    """The section of ``summary.md``: the most similar pairs with both grades."""
    lines = ["## Similar submissions", ""]
    if found.skipped:
        return lines + [f"Skipped: {found.skipped}.", ""]
    if not found.pairs:
        return lines + ["No pair of submissions is unusually similar (starter code excluded).", ""]
    by_student = {r.student: r for r in results}
    lines += [
        f"{len(found.pairs)} pair(s) share at least {FLAG_AT:.0%} of one side's own code "
        "(starter code excluded; `_instructor/similarity.md` has them per chapter). "
        "Similar is not proof: read the code.",
        "",
        *HEADER,
    ]
    lines += [_row(p, by_student) for p in found.pairs[:SUMMARY_SHOWN]]
    if len(found.pairs) > SUMMARY_SHOWN:
        lines.append(
            f"\n... and {len(found.pairs) - SUMMARY_SHOWN} more pairs in "
            "`_instructor/similarity.md` and `_instructor/similarity.csv`."
        )
    return lines + [""]


def markdown(found: Similarity, results: list, chapters: list[str]) -> str:
    lines = ["# Similar submissions (instructor only)", ""]
    if found.skipped:
        return "\n".join(lines + [f"Skipped: {found.skipped}.", ""])
    lines += [
        "Per chapter, pairs whose module shares at least "
        f"{FLAG_AT:.0%} of one side's own code and {MIN_TOKENS}+ matching characters, by "
        "copydetect (MOSS's winnowing over a token stream with names and strings blanked, "
        "so renamed variables and reordered functions still match); the chapter's starter "
        "code is excluded. Similar is not proof: read the two files.",
        "",
    ]
    by_student = {r.student: r for r in results}
    for chapter in chapters:
        if chapter not in found.compared:
            continue
        mine = [p for p in found.pairs if p.chapter == chapter]
        lines += [f"## {chapter}", "", f"{found.compared[chapter]} submissions compared; "]
        lines[-1] += f"{len(mine)} pair(s) flagged." if mine else "no pair flagged."
        lines.append("")
        if mine:
            lines += HEADER + [_row(p, by_student) for p in mine[:PAIRS_SHOWN]]
            if len(mine) > PAIRS_SHOWN:
                lines.append(f"\n... and {len(mine) - PAIRS_SHOWN} more in `similarity.csv`.")
            lines.append("")
    return "\n".join(lines) + "\n"


def csv_text(found: Similarity, results: list) -> str:
    by_student = {r.student: r for r in results}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        ["chapter", "student_a", "grade_a", "student_b", "grade_b", "share_a", "share_b", "chars"]
    )
    for p in found.pairs:
        writer.writerow(
            [
                p.chapter,
                p.a,
                _grade(by_student, p.a, p.chapter),
                p.b,
                _grade(by_student, p.b, p.chapter),
                p.share_a,
                p.share_b,
                p.tokens,
            ]
        )
    return buf.getvalue()


def write(folder: Path, found: Similarity, results: list, chapters: list[str]) -> None:
    """``similarity.md`` and ``similarity.csv`` in ``folder`` (the run's ``_instructor/``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "similarity.md").write_text(markdown(found, results, chapters))
    (folder / "similarity.csv").write_text(csv_text(found, results))


def sources_of(entries: dict[str, dict]) -> dict[str, dict[str, str]]:
    """The modules journaled with each student's entry (absent from older journals)."""
    return {s: e["sources"] for s, e in entries.items() if isinstance(e.get("sources"), dict)}
