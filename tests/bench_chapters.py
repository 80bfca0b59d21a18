"""Benchmark (not a test): wall time of each chapter's public + hidden tests on the
reference solutions, beside the bare cost of `import torch`.

    python tests/bench_chapters.py [chNN ...] [--repeat N]

Prints one row per chapter: wall and CPU seconds of
`pytest exercises/chNN grader/hidden/chNN --impl solutions`, and each minus the import
(CPU time is the fairer figure when the machine is busy). Each run is paired with an
`import torch` timed just before it, and "beyond import" is the median of the paired
differences: on a shared virtual machine both drift by ±20% over minutes.
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

    imports = [wall([sys.executable, "-c", "import torch"]) for _ in range(max(3, args.repeat))]
    base = statistics.median(r[0] for r in imports)
    base_cpu = statistics.median(r[1] for r in imports)
    label = 'python -c "import torch"'
    print(f"{label:<34}{base:7.2f} s wall {base_cpu:7.2f} s cpu")
    # The first optimizer.step() or torch.compile in a process imports torch._dynamo too.
    dyn = wall([sys.executable, "-c", "import torch, torch._dynamo"])
    label = '... "import torch, torch._dynamo"'
    print(f"{label:<34}{dyn[0]:7.2f} s wall {dyn[1]:7.2f} s cpu")
    print(
        f"{'chapter':<10}{'wall (s)':>10}{'beyond import':>15}{'cpu (s)':>10}{'beyond import':>15}  exit"
    )
    import_torch = [sys.executable, "-c", "import torch"]
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
        pairs = [(wall(import_torch), wall(cmd)) for _ in range(args.repeat)]
        t = statistics.median(run[0] for _, run in pairs)
        c = statistics.median(run[1] for _, run in pairs)
        t_beyond = statistics.median(run[0] - imp[0] for imp, run in pairs)
        c_beyond = statistics.median(run[1] - imp[1] for imp, run in pairs)
        print(f"{ch:<10}{t:10.2f}{t_beyond:15.2f}{c:10.2f}{c_beyond:15.2f}  {pairs[-1][1][2]}")


if __name__ == "__main__":
    main()
