"""Measure the similarity report (a script, not a test): prints, per chapter, its flag
level and how alike each disguised copy of the reference is to it.

    python tests/bench_similarity.py [--chapters ch03,ch07] [--students 500]

1. Per chapter: the flag level and what set it, the most alike correct alternative, and
   the score of the reference run through each step of ``tests/grader_data/disguise.py``
   (and all of them, and ``noisy``: a ``print(end="")`` after every statement, which no
   reader can drop), ``*`` where flagged; beside each, what copydetect on the raw text
   (this report's method before the canonical form) gave, when copydetect is installed.
2. ``--students``: the time ``similarity.find`` takes over that many ch00 modules of
   random arithmetic with 30 copies among them (the 500-student test's class), cold
   and again with the canonical texts cached.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grader import canonical, similarity  # noqa: E402
from harness import index  # noqa: E402
from tests.grader_data import disguise  # noqa: E402

STEPS = {**disguise.STEPS, "all": disguise.everything, "noisy": disguise.noisy}


def before(code_a: str, code_b: str, stub: str) -> float | None:
    """The score copydetect gave on the raw text (k 25, every k-gram, stub excluded)."""
    try:
        from copydetect import CodeFingerprint, compare_files
    except ImportError:
        return None
    import io

    import numpy as np

    def fp(code, drop=None):
        return CodeFingerprint("m.py", 25, 1, drop, fp=io.StringIO(code))

    drop = np.array(sorted(fp(stub).hashes)) if stub else None
    a, b = fp(code_a, drop), fp(code_b, drop)
    return float(max(compare_files(a, b)[1]))


def chapter_table(chapter_ids: list[str]) -> None:
    flagged = total = 0
    print("chapter level (set by)              honest | " + " ".join(f"{s:>11}" for s in STEPS))
    for cid in chapter_ids:
        chapter = index.chapter(cid)
        stub, ref = similarity.starter(chapter), similarity.reference(chapter)
        names = canonical.contract_names(stub)
        canon = similarity.Canon(stub)
        codes = {step: change(ref, names) for step, change in STEPS.items()}
        pairs, rule = similarity.chapter_pairs(chapter, codes, canon)
        scores = {p.a: p.score for p in pairs if p.of_reference}  # flagged copies of the reference
        cells = []
        for step, code in codes.items():
            new = scores.get(step) or similarity.compare(cid, "a", ref, "b", code, stub).score
            old = before(ref, code, stub)
            mark = "*" if step in scores else " "
            cells.append(f"{'' if old is None else f'{old:.2f}>'}{new:.2f}{mark}".rjust(11))
            if step != "noisy":
                flagged, total = flagged + (step in scores), total + 1
        honest = f"{rule.honest:.2f}" if rule.honest is not None else "  - "
        basis = rule.basis.replace("set by the ", "").replace("the ", "")[:22]
        print(f"{cid:7} {rule.level:.2f} ({basis:22}) {honest} | " + " ".join(cells))
    print(f"\nflagged: {flagged} of {total} (chapter, step) cases, noisy left out")


def class_time(n: int) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from tests.test_figures import big_class

    _, codes = big_class(n)
    chapter = index.chapter("ch00")
    sources = {s: {f"ch00/{chapter.module}.py": code} for s, code in codes.items()}
    with tempfile.TemporaryDirectory() as tmp:
        for label in ("cold", "cached"):
            start = time.perf_counter()
            found = similarity.find(sources, [chapter], Path(tmp))
            print(
                f"{n} students, {label}: {time.perf_counter() - start:.1f} s, "
                f"{len(found.pairs)} pairs flagged ({found.rules['ch00'].describe()})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", default=",".join(index.chapters()))
    parser.add_argument("--students", type=int, default=0)
    args = parser.parse_args()
    random.seed(0)
    chapter_table(args.chapters.split(","))
    if args.students:
        class_time(args.students)


if __name__ == "__main__":
    main()
