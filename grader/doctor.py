"""``python -m grader doctor``: what isolation this machine gives, and a fresh proof
that the grader works here (the reference solutions at full marks through the real
sandbox, limits and test process), without the cache."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from grader import grade, isolation, preflight, sandbox, score


def print_isolation(limits: sandbox.Limits) -> None:
    """The mode, the declaration a student process gets in it, and what it leaves open."""
    mode, abi = isolation.mode(), isolation.landlock_abi()
    print(f"isolation: {mode} — {isolation.DESCRIPTION[mode]}")
    print(f"  Landlock: ABI {abi}" if abi else "  Landlock: not available here")
    with sandbox.parent_dir() as tmp:
        folder, work = tmp / "students" / "chNN-public", tmp / "work" / "p1"
        conf = isolation.declare(mode, folder, work, sandbox.isolation_settings(limits))
    for line in conf.describe():
        print(f"  {line}")
    for gap in isolation.gaps(mode, abi):
        print(f"  not defended here: {gap}")
    if not isolation.confines(mode, abi):
        print(
            "  `grade` refuses to run a class's code in this mode unless given "
            "--no-confinement; `check` runs, saying so"
        )


def main(chapters: list[str] | None, limits: dict | None = None) -> int:
    chosen = grade.choose_chapters(chapters)
    mode = isolation.mode()
    env = preflight.environment()
    print(f"python: {env['python']} at {env['executable']}")
    print("packages: " + ", ".join(f"{k} {v or 'MISSING'}" for k, v in env["packages"].items()))
    print(f"temporary folder: {env['tmp']}")
    print(f"chapters: {', '.join(c.id for c in chosen)}")
    lim = grade.default_limits(1, **(limits or {}))
    print_isolation(lim)
    with ThreadPoolExecutor(1) as pool, sandbox.parent_dir() as tmp:
        plan = grade.make_plan(chosen, lim)
        gradebook = preflight.environment_problems(chosen, mode, gradebook=True)
        problems = preflight.environment_problems(chosen, mode)
        extra = [p for p in gradebook if p not in problems]
        print(f"nbgrader gradebook: {'not available: ' + extra[0] if extra else 'available'}")
        if problems:
            proof = preflight.Proof(False, mode, problems)
        else:
            specs = pool.submit(lambda: [score.TestSpec(**t) for t in grade.cached_specs(plan)])
            print("proving: the reference solutions through the sandbox ...", file=sys.stderr)
            proof = preflight.prove(chosen, specs, lim, plan.key, tmp, cache=None)
    if not proof.ok:
        print(proof.refusal())
        return 2
    if proof.score:
        got, most = proof.score
        print(f"ok: the reference solutions scored {got}/{most} here; this machine can grade")
        preflight.remember(grade.cache(), plan.key, preflight.reference_files(chosen), (got, most))
    else:
        print("ok: no reference solutions here (a student release); the checks passed")
    return 0
