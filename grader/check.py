"""A self-learner's score: public and hidden tests on their own ``exercises/`` (or
``--impl PATH``), in the same sandbox as the instructor's grading, with feedback.

    python -m grader check [chNN ...] [--impl PATH]
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from grader import collect, grade, report, run, sandbox, score
from harness.target import resolve_impl


def main(chapters: list[str], impl: str = "exercises", limits: dict | None = None) -> int:
    chosen = grade.choose_chapters(chapters)
    folder = resolve_impl(impl)
    files, notes = collect.read_folder(folder, chosen)
    if not any(c.hidden_tests.exists() for c in chosen):
        print(
            "no hidden tests here (a student release): checking the public tests only",
            file=sys.stderr,
        )
    print(f"checking {', '.join(c.id for c in chosen)} in {folder} ...", file=sys.stderr)
    lim = grade.default_limits(1, **(limits or {}))
    with ThreadPoolExecutor(1) as pool, sandbox.parent_dir() as tmp:
        # the trusted collection is cached per user, as for `grade`: a student checking
        # again does not pay a second `import torch` beside the sandbox's
        plan = grade.make_plan(chosen, lim)
        specs = pool.submit(lambda: [score.TestSpec(**t) for t in grade.cached_specs(plan)])
        records, _ = run.grade_submission(files, chosen, specs, lim, tmp_root=tmp)
        entry = {"records": {n: r.to_dict() for n, r in records.items()}, "notes": notes}
        result = score.score_student("you", specs.result(), entry)
    print(report.feedback_md(result, [c.id for c in chosen]))
    for c in chosen:
        got, most = result.chapter_score(c.id)
        print(f"{c.id:<6} {got:>4} / {most:<4} {c.title}")
    print(f"total  {result.total:>4} / {result.max_total}")
    return 0
