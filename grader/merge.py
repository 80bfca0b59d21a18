"""Spread grading over machines and join the pieces.

``--shard K/N`` grades the K-th of N slices of the submissions (sorted by student id,
every N-th one from the K-th), so any batch scheduler can run the N slices anywhere;
``python -m grader merge OUT1 OUT2 ... --out OUT`` joins their journals and writes the
outputs from them, exactly as one run over all submissions writes them. Merging again
into an OUT that holds an earlier merge writes ``_instructor/regrade.md`` as a rerun of
``grade`` does: whose scores moved since that merge, and which tests changed verdict.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from grader import escape, journal, outputs, regrade, score
from harness import index


def parse_shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected K/N, e.g. 2/4") from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


def shard_of(items: list, k: int, n: int) -> list:
    """The K-th (1-based) of N deterministic slices of ``items`` (by student id)."""
    ordered = sorted(items, key=lambda s: s.student)
    return [s for i, s in enumerate(ordered) if i % n == k - 1]


def main(parts: list[Path], out: Path, gradebook: bool | None = None) -> int:
    """Join the parts' journals into ``out`` and write every output from them.
    ``gradebook``: None writes the nbgrader gradebook when the parts graded an nbgrader
    course directory."""
    out = Path(out)
    merged = journal.Journal(out / ".journal")
    # An OUT that is itself one of the parts is not an earlier merge: only its own slice.
    is_part = any(Path(part).resolve() == out.resolve() for part in parts)
    before = None if is_part else regrade.snapshot(merged)
    chapters_ids, expected, entries = None, None, {}
    for part in parts:
        jr = journal.Journal(Path(part) / ".journal")
        run_meta, exp = jr.read_meta("run"), jr.read_meta("expected")
        if run_meta is None or exp is None:
            raise SystemExit(f"{part} holds no grader journal (was it a grader --out folder?)")
        if chapters_ids is None:
            chapters_ids, expected = run_meta["chapters"], exp
            # Provenance and the submissions' place: the first part's (the keys match).
            carried = {m: jr.read_meta(m) for m in ("provenance", "source")}
        elif run_meta["chapters"] != chapters_ids or exp["key"] != expected["key"]:
            raise SystemExit(
                f"{part} was graded with other chapters or other tests than {parts[0]}"
            )
        for student in jr.students():
            if student in entries:
                print(
                    f"warning: {escape.terminal(student)} is in more than one part; "
                    "keeping the first",
                    file=sys.stderr,
                )
                continue
            entries[student] = jr.get(student)
            if Path(part).resolve() != out.resolve():
                merged.folder.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(jr.path(student), merged.path(student))
    merged.write_meta("run", {"chapters": chapters_ids})
    merged.write_meta("expected", expected)
    for name, data in carried.items():
        if data is not None:
            merged.write_meta(name, data)
    known = index.chapters()
    chapters = [known[c] for c in chapters_ids if c in known]
    specs = [score.TestSpec(**t) for t in expected["tests"]]
    if gradebook is None:
        gradebook = (carried.get("source") or {}).get("layout") == "nbgrader"
    written = outputs.write(
        out,
        chapters,
        specs,
        entries,
        prov=carried.get("provenance"),
        before=before,
        key=expected["key"],
        gradebook=gradebook,
    )
    print(
        f"merged {len(parts)} parts: {len(written.results)} students into {out}; wrote:",
        file=sys.stderr,
    )
    for line in written.listing(out):
        print(f"  {line}", file=sys.stderr)
    return 0
