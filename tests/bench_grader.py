"""Benchmark the grader (a script, not a test): prints the speed ratios of its issue.

    python tests/bench_grader.py [--chapters ch00,ch01] [--copies 8] [--demo] [--stub ch01]
                                 [--quick]

1. One complete submission (every chosen chapter's reference solution) graded with
   ``--jobs 1`` against a bare ``pytest`` of the same public and hidden tests on
   ``solutions/`` (target: at most 1.10x once the proof and the collection are cached).
   The first run also proves the grader (the preflight: the reference once more, beside
   it); the second finds the proof cached; the third writes the nbgrader gradebook too
   (``--gradebook``, what ``grade`` did by default before it was written on request).
   ``--quick``: this section only.
2. ``grader check`` of the same chapters against that bare ``pytest`` (target: at most 1.3x).
3. ``--copies`` complete ch00 submissions graded with ``--jobs 2`` against ``--jobs 1``
   (target: at least 1.7x the throughput on 2 cores).
4. A chapter that was not submitted (target: at most 1 s) and an untouched stub chapter
   against a bare ``pytest`` of it on the stubs (``--stub``, target: at most 1.5x).
5. ``--demo``: the README's main job on a fresh output folder and an empty cache
   (target: at most 2 min on 2 cores).
The gradebook is left out of all but the third run of section 1 and the demo.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness import index  # noqa: E402


def timed(cmd: list[str], check: bool = True, env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and everything it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu


def grade(
    subs: Path, out: Path, chapters: str, jobs: int, env: dict | None = None, gradebook=False
) -> tuple[float, float]:
    shutil.rmtree(out, ignore_errors=True)
    return timed(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            str(subs),
            "--out",
            str(out),
            "--chapters",
            chapters,
            "--jobs",
            str(jobs),
            "--gradebook" if gradebook else "--no-gradebook",
        ],
        env=env,
    )


def missing_and_stub(tmp: Path, env: dict, stub: str) -> None:
    """Section 4: what a chapter costs when it is absent, and when it is an untouched stub."""
    from grader import run
    from grader.sandbox import Limits

    chapter = index.chapter(stub)
    module = f"{chapter.module}.py"
    only00 = tmp / "only00" / "s" / "ch00"
    only00.mkdir(parents=True)
    shutil.copyfile(REPO / "exercises/ch00/training_loop.py", only00 / "training_loop.py")

    class Spec:
        nodeid = f"exercises/{stub}/test_{chapter.module}.py::test_x"

    t0 = time.perf_counter()
    run.grade_submission({}, [chapter], [Spec()], Limits())
    alone = time.perf_counter() - t0
    grade(tmp / "only00", tmp / "warm00", "ch00", 1, env)  # warm the proof and collection
    grade(tmp / "only00", tmp / "warm01", f"ch00,{stub}", 1, env)
    with_missing = [grade(tmp / "only00", tmp / f"m{k}", f"ch00,{stub}", 1, env)[0] for k in "ab"]
    without = [grade(tmp / "only00", tmp / f"w{k}", "ch00", 1, env)[0] for k in "ab"]
    print(
        f"a chapter not submitted: {alone * 1000:.0f} ms to record in-process; "
        f"{min(with_missing) - min(without):+.1f} s on a whole `grade` (best of 2; target <= 1 s)"
    )
    stubbed = tmp / "stub" / "s" / stub
    stubbed.mkdir(parents=True)
    shutil.copyfile(REPO / "exercises" / stub / module, stubbed / module)
    tests = [str(p) for p in (chapter.public_tests, chapter.hidden_tests) if p.exists()]
    bare = timed(
        [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider"], check=False
    )[0]
    grade(tmp / "stub", tmp / "stub-warm", stub, 1, env)  # proof of this chapter cached
    graded = min(grade(tmp / "stub", tmp / f"stub{k}", stub, 1, env)[0] for k in "ab")
    print(
        f"an untouched {stub} stub: grade {graded:.1f} s, bare pytest on the stub {bare:.1f} s "
        f"({graded / bare:.2f}x, target <= 1.5x)"
    )


def demo(tmp: Path) -> None:
    """Section 5: the README's main job, from nothing."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "demo-cache")}
    wall, cpu = timed(
        [sys.executable, "-m", "grader", "grade", "--out", str(tmp / "demo-out")], env=env
    )
    print(f"the demo (`nox -s demo`'s command), empty cache: {wall:.0f} s wall (target <= 120 s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", help="default: every chapter with a solution")
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--stub", default="ch01", help="the chapter timed as an untouched stub")
    parser.add_argument("--demo", action="store_true", help="also time the demo")
    parser.add_argument("--only-demo", action="store_true")
    parser.add_argument("--quick", action="store_true", help="section 1 only")
    args = parser.parse_args()
    if args.only_demo:
        with tempfile.TemporaryDirectory() as tmp:
            demo(Path(tmp))
        return 0
    chapters = [
        c
        for c in index.chapters().values()
        if (REPO / "solutions" / c.id / f"{c.module}.py").is_file()
        and (not args.chapters or c.id in args.chapters.split(","))
    ]
    names = ",".join(c.id for c in chapters)
    tests = [
        str(p.relative_to(REPO))
        for c in chapters
        for p in (c.public_tests, c.hidden_tests)
        if p.exists()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        complete = tmp / "one" / "complete"
        for c in chapters:
            (complete / c.id).mkdir(parents=True)
            shutil.copyfile(
                REPO / "solutions" / c.id / f"{c.module}.py", complete / c.id / f"{c.module}.py"
            )
        bare = timed(
            [
                sys.executable,
                "-m",
                "pytest",
                *tests,
                "--impl",
                "solutions",
                "-q",
                "-p",
                "no:cacheprovider",
            ],
            check=False,  # timing only: a failing test in a chapter being written does not matter
            # the same torch threads as the grader gives one job (cores / --jobs), so CPU
            # seconds compare like with like (idle OpenMP threads spin and count as CPU time)
            env={**os.environ, "OMP_NUM_THREADS": str(max(1, os.cpu_count() or 1))},
        )
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")}  # starts empty
        cold = grade(tmp / "one", tmp / "out1", names, 1, env)
        warm = grade(tmp / "one", tmp / "out2", names, 1, env)  # trusted collection cached
        book = grade(tmp / "one", tmp / "out3", names, 1, env, gradebook=True)
        print(f"chapters: {names}")
        print(
            f"bare pytest of public+hidden tests on solutions: {bare[0]:.1f} s wall, {bare[1]:.1f} s CPU"
        )
        for label, (wall, cpu) in (
            ("first run", cold),
            ("proof and collection cached", warm),
            ("cached, with --gradebook", book),
        ):
            print(
                f"grading one complete submission, --jobs 1, {label}: {wall:.1f} s wall "
                f"({wall / bare[0]:.2f}x), {cpu:.1f} s CPU ({cpu / bare[1]:.2f}x) (target <= 1.10x)"
            )
        if args.quick:
            return 0

        check = timed(
            [sys.executable, "-m", "grader", "check", *names.split(","), "--impl", "solutions"],
            env=env,  # the trusted collection is cached by now, as on a student's second check
        )
        print(
            f"grader check of the same tests on solutions: {check[0]:.1f} s wall "
            f"({check[0] / bare[0]:.2f}x) (target <= 1.3x)"
        )

        many = tmp / "many"
        for k in range(args.copies):
            (many / f"student{k:02d}" / "ch00").mkdir(parents=True)
            shutil.copyfile(
                REPO / "solutions/ch00/training_loop.py",
                many / f"student{k:02d}/ch00/training_loop.py",
            )
        grade(many, tmp / "j0", "ch00", 1, env)  # the ch00 proof, cached for both
        one = grade(many, tmp / "j1", "ch00", 1, env)[0]
        two = grade(many, tmp / "j2", "ch00", 2, env)[0]
        print(f"{args.copies} ch00 submissions: --jobs 1 {one:.1f} s, --jobs 2 {two:.1f} s")
        print(
            f"throughput --jobs 2 / --jobs 1: {one / two:.2f}x (target >= 1.7x on {os.cpu_count()} cores)"
        )
        missing_and_stub(tmp, env, args.stub)
        if args.demo:
            demo(tmp)
        print(
            f"load average now: {os.getloadavg()[0]:.1f} (numbers mean little when it exceeds the cores)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
