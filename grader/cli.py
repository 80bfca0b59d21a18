"""``python -m grader``: argument parsing only; each command calls one main function."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def _chapters(text: str) -> list[str]:
    return [c.strip() for c in text.replace(" ", ",").split(",") if c.strip()]


def _limit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--test-timeout", type=float, help="seconds per test (default 60)")
    p.add_argument("--wall", type=float, help="seconds per submission, all tests (default 900)")
    p.add_argument(
        "--memory-mb", type=int, help="address-space limit per submission (default 4096)"
    )


def _gradebook_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--gradebook",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write the nbgrader gradebook OUT/gradebook.db (default: with --layout nbgrader "
        "only; it costs seconds; `python -m grader gradebook OUT` writes it later)",
    )


def _confinement_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-confinement",
        action="store_true",
        help="run student code even where this machine cannot confine it (no namespaces "
        "and no Landlock, or your own user): their code could then read and change what "
        "you can (see `python -m grader doctor`)",
    )


def _limits(args) -> dict:
    return {"test_timeout": args.test_timeout, "wall": args.wall, "memory_mb": args.memory_mb}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m grader", description="The course grader.")
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grade", help="grade a folder of submissions (default: the bundled demo)")
    g.add_argument(
        "submissions",
        nargs="?",
        type=Path,
        help="one folder or .zip per student (with --layout nbgrader: an nbgrader course "
        "directory); omitted: the bundled demo submissions",
    )
    g.add_argument(
        "--layout",
        choices=("folders", "nbgrader"),
        default="folders",
        help="folders: SUBMISSIONS holds one entry per student (default); nbgrader: "
        "SUBMISSIONS is a course directory, graded from its submitted/<student>/<chNN>/",
    )
    g.add_argument("--out", type=Path, default=Path("grading-out"), help="output folder")
    g.add_argument("--chapters", type=_chapters, help="e.g. ch00,ch02 (default: all)")
    g.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="submissions graded at once (default: cores)",
    )
    g.add_argument("--shard", help="K/N: grade only the K-th of N slices of the submissions")
    _confinement_arg(g)
    _gradebook_args(g)
    _limit_args(g)

    c = sub.add_parser("check", help="a self-learner's score on public and hidden tests")
    c.add_argument("chapters", nargs="*", help="chapters to check (default: all)")
    c.add_argument("--impl", default="exercises", help="folder shaped like exercises/")
    _limit_args(c)

    h = sub.add_parser("hint", help="a task's hint and the fix itself, e.g. hint ch03.5")
    h.add_argument("tasks", nargs="+", metavar="chNN.K", help="task ids (course/chNN.toml)")
    h.add_argument(
        "--level", type=int, choices=(1, 2), default=2, help="1: the hint only; 2: and the fix"
    )

    lb = sub.add_parser("lab", help="a chapter's lab notebook: open it in JupyterLab, or --run it")
    lb.add_argument("chapter", help="e.g. ch07")
    lb.add_argument("--run", action="store_true", help="run it here, headless, and show it")
    lb.add_argument("--impl", default="exercises", help="folder shaped like exercises/")

    r = sub.add_parser("release", help="build the student bundle")
    r.add_argument("out", type=Path)

    gs = sub.add_parser("gradescope", help="write OUT/autograder.zip for a Gradescope assignment")
    gs.add_argument("out", type=Path)
    gs.add_argument("--chapters", type=_chapters, help="e.g. ch02,ch07 (default: all)")

    gr = sub.add_parser("gradescope-run", help="(inside Gradescope) grade /autograder/submission")
    gr.add_argument(
        "--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    )

    d = sub.add_parser(
        "doctor", help="prove the grader on this machine and say what isolation it gives"
    )
    d.add_argument("--chapters", type=_chapters, help="e.g. ch00,ch02 (default: all)")
    _limit_args(d)

    m = sub.add_parser("merge", help="join the outputs of --shard runs")
    m.add_argument("parts", nargs="+", type=Path)
    m.add_argument("--out", type=Path, required=True)
    _gradebook_args(m)
    _export_parsers(sub)
    return p


def _export_parsers(sub) -> None:
    """Classroom 50, the LMS files and ``verify``."""
    c5 = sub.add_parser("classroom50", help="write Classroom 50's declarative tests into OUT")
    c5.add_argument("out", type=Path)
    c5.add_argument("--chapters", type=_chapters, help="e.g. ch02,ch07 (default: all)")

    lm = sub.add_parser("lms", help="(re)write OUT/_instructor/{canvas,moodle}.csv")
    lm.add_argument("out", type=Path)
    lm.add_argument(
        "--roster", type=Path, help="CSV: student (our id), name, canvas_id, sis_user_id, ..."
    )

    v = sub.add_parser("verify", help="regrade a sample of OUT and compare the grades")
    v.add_argument("out", type=Path)
    v.add_argument("--sample", type=int, default=3, help="students to regrade (default 3)")
    v.add_argument("--student", action="append", help="regrade this student (repeatable)")
    v.add_argument("--submissions", type=Path, help="where the submissions are now")
    v.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="students regraded at once (default: cores)",
    )
    _confinement_arg(v)

    gb = sub.add_parser("gradebook", help="write OUT/gradebook.db (nbgrader) from OUT's journal")
    gb.add_argument("out", type=Path)
    v.add_argument("--seed", type=int, default=0, help="which sample (default 0)")


def _export_main(args) -> int | None:
    if args.command == "classroom50":
        from grader import classroom50

        return classroom50.main(args.out, args.chapters)
    if args.command == "lms":
        from grader import lms

        return lms.main(args.out, args.roster)
    if args.command == "gradebook":
        from grader import gradebook

        return gradebook.main(args.out)
    if args.command == "verify":
        from grader import verify

        return verify.main(
            args.out,
            args.sample,
            args.student,
            args.submissions,
            args.jobs,
            args.seed,
            no_confinement=args.no_confinement,
        )
    return None


def _hint(tasks: list[str], level: int) -> int:
    from harness import index

    for task_id in tasks:
        try:
            print(index.hint_text(task_id, level))
        except KeyError as exc:
            print(f"error: {exc.args[0]}: task ids look like ch03.5 (course/chNN.toml lists them)")
            return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    done = _export_main(args)
    if done is not None:
        return done
    if args.command == "grade":
        from grader import grade, merge

        shard = merge.parse_shard(args.shard) if args.shard else None
        return grade.main(
            args.submissions,
            args.out,
            args.chapters,
            args.jobs,
            shard=shard,
            limits=_limits(args),
            gradebook=args.gradebook,
            layout=args.layout,
            no_confinement=args.no_confinement,
        )
    if args.command == "check":
        from grader import check

        return check.main(args.chapters, args.impl, limits=_limits(args))
    if args.command == "hint":
        return _hint(args.tasks, args.level)
    if args.command == "lab":
        from grader import labs

        return labs.main(args.chapter, args.run, args.impl)
    if args.command == "gradescope":
        from grader import gradescope

        return gradescope.main_build(args.out, args.chapters)
    if args.command == "gradescope-run":
        from grader import gradescope

        return gradescope.run(args.root)
    if args.command == "doctor":
        from grader import doctor

        return doctor.main(args.chapters, limits=_limits(args))
    if args.command == "release":
        from grader import release

        return release.main(args.out)
    from grader import merge

    return merge.main(args.parts, args.out, gradebook=args.gradebook)
