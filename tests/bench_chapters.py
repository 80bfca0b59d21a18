"""Benchmark (not a test): wall time of each chapter's public + hidden tests on the
reference solutions, beside the bare cost of `import torch`.

    python tests/bench_chapters.py [chNN ...] [--repeat N]

Prints one row per chapter: seconds for
`pytest exercises/chNN grader/hidden/chNN --impl solutions`, and that minus the import.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import index  # noqa: E402


def wall(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    return time.perf_counter() - start, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    chapters = args.chapters or list(index.chapters())

    imports = [wall([sys.executable, "-c", "import torch"])[0] for _ in range(max(3, args.repeat))]
    base = statistics.median(imports)
    label = 'python -c "import torch"'
    print(f"{label:<34}{base:7.2f} s")
    print(f"{'chapter':<10}{'tests (s)':>12}{'beyond import (s)':>20}  exit")
    for ch in chapters:
        chap = index.chapter(ch)
        paths = [
            str(p.relative_to(REPO)) for p in (chap.public_tests, chap.hidden_tests) if p.exists()
        ]
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            *paths,
            "--impl",
            "solutions",
            "-q",
            "-p",
            "no:cacheprovider",
        ]
        runs = [wall(cmd) for _ in range(args.repeat)]
        t = statistics.median(r[0] for r in runs)
        print(f"{ch:<10}{t:12.2f}{t - base:20.2f}  {runs[-1][1]}")


if __name__ == "__main__":
    main()
