"""Benchmark (not a test): wall time of each chapter's public + hidden tests on the
reference solutions, beside the bare cost of the imports they cannot avoid.

    python tests/bench_chapters.py [chNN ...] [--repeat N]

Prints one row per chapter: wall and CPU seconds of
`pytest exercises/chNN grader/hidden/chNN --impl solutions`, and the wall seconds beyond
`import torch`, and beyond `import torch` plus the chapter's `preload` modules (those its
tests always load, such as torch._dynamo, which the grader imports once per class). Each
run is paired with the imports timed just before it, and each "beyond" figure is the
median of the paired differences: on a shared virtual machine both drift by 20-50%
within an hour.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import index  # noqa: E402

# One thread, as the project's meta-tests and a `--jobs 2` grader on 2 cores run.
ENV = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}


def wall(cmd: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the child, exit code): CPU time stays meaningful on a busy machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    chapters = args.chapters or list(index.chapters())

    def importing(modules) -> list[str]:
        return [sys.executable, "-c", "import " + ", ".join(["torch", *modules])]

    print(
        f"{'chapter':<10}{'wall (s)':>9}{'cpu (s)':>9}{'beyond torch':>14}"
        f"{'beyond preload':>16}  preload  exit"
    )
    for ch in chapters:
        chap = index.chapter(ch)
        paths = [
            str(p.relative_to(REPO)) for p in (chap.public_tests, chap.hidden_tests) if p.exists()
        ]
        cmd = [sys.executable, "-m", "pytest", *paths, "--impl", "solutions", "-q"]
        cmd += ["-p", "no:cacheprovider"]
        rows = []
        for _ in range(args.repeat):
            torch_only = wall(importing(()))
            preloaded = wall(importing(chap.preload)) if chap.preload else torch_only
            run = wall(cmd)
            rows.append((run[0], run[1], run[0] - torch_only[0], run[0] - preloaded[0], run[2]))
        wall_s, cpu_s, beyond_torch, beyond_preload = (
            statistics.median(r[k] for r in rows) for k in range(4)
        )
        print(
            f"{ch:<10}{wall_s:9.2f}{cpu_s:9.2f}{beyond_torch:14.2f}{beyond_preload:16.2f}  "
            f"{','.join(chap.preload) or '-':<7}  {rows[-1][4]}"
        )


if __name__ == "__main__":
    main()
