"""Classroom 50 (the successor of the retired GitHub Classroom): declarative tests for
its built-in runner, one ``run`` test per task worth that task's public points.

    python -m grader classroom50 OUT [--chapters ch02,ch03]

writes, for the chosen chapters:

- ``OUT/<chNN>.json``: the bare JSON array ``gh teacher assignment add ... --tests``
  takes for one assignment per chapter: first the setup command (a 0-point ``run``
  test named ``setup``, as Classroom 50 stores an assignment's setup command), then one
  ``run`` test per task whose command runs that task's public tests (``pytest --task``,
  through ``python -m grader.classroom50 TASK``) and passes when they all pass;
- ``OUT/tests.json``: the same for all chosen chapters as one assignment (when that
  fits Classroom 50's limits: 100 tests, and timeouts within one grading job);
- ``OUT/runtime.json``: the ``--runtime`` block (the Python version of the lock);
- ``OUT/README.md``: how to register the assignments.

Why ``run`` and not ``python`` tests: a ``python`` test splits its points evenly across
the pytest cases it runs, while our tests carry their own points; a ``run`` test is
all-or-nothing, which is what a task's points mean here (the same rule the retired
GitHub Classroom workflow used). The public tests run in the student's own repository
on GitHub's runner, where nothing is isolated: those scores are advisory. Grades for
credit come from ``python -m grader grade`` (public and hidden tests, sandboxed).

Two limits of the runner shape the tests. Its release page keeps the first 2000
characters of a test's output, so a task's command (``run_task``) prints the task's
state, pytest's counts and the hint first, and pytest's report after. And all tests of
an assignment run in one grading job of 15 minutes, so the declared timeouts (setup
included) add up to less than that (``JOB_SECONDS``); a test that runs out of its time
fails instead of taking the whole job down.

Checked against the documented format (``problems``): Classroom 50's wiki pages
Autograding-Basics (fields table, "at most 100 tests per assignment", the setup
command) and its schema ``schemas/tests-v1.schema.json`` (``$defs/test``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from harness import index

PYTORCH_CPU = "https://download.pytorch.org/whl/cpu"
SETUP_COMMAND = (
    f"python -m pip install --index-url {PYTORCH_CPU} "
    "--extra-index-url https://pypi.org/simple -c constraints.txt -e ."
)
# The lock (constraints.txt) is made on Python 3.11; GitHub's runner would pick 3.14.
RUNTIME = {"runs-on": "ubuntu-latest", "python": "3.11"}
# One grading job runs an assignment's tests one after another, within 15 minutes; the
# runner's own steps (checkout, Python) come off that first.
JOB_SECONDS = 900
RUNNER_SECONDS = 90
SETUP_TIMEOUT = 300  # seconds: torch's CPU wheel and the pins
TASK_TIMEOUT = 120  # seconds at most: one torch import plus a task's public tests
MIN_TASK_TIMEOUT = 30  # fewer seconds than this per task: register fewer tasks per job
OUTPUT_KEPT = 2000  # characters of a test's output the release page keeps

# Classroom 50's documented limits on declarative tests.
MAX_TESTS = 100
NAME_MAX_BYTES = 100
TIMEOUT_RANGE = (0, 600)  # 0 (or absent): the runner's default of 10 s
POINTS_RANGE = (0, 1000)
EXIT_CODE_RANGE = (0, 255)
TYPES = ("io", "run", "python")
FIELDS = {
    "name",
    "type",
    "setup",
    "run",
    "input",
    "input-file",
    "expected",
    "expected-file",
    "comparison",
    "timeout",
    "exit-code",
    "points",
    "failure-details",
    "show-output",
    "show-command",
}
IO_ONLY = ("input", "input-file", "expected", "expected-file", "comparison")


def public_points(specs) -> dict[str, int]:
    """task id -> the points of its public tests (CUDA tests count 0 everywhere)."""
    points: dict[str, int] = {}
    for s in specs:
        if s.task and not s.hidden and not s.cuda:
            points[s.task] = points.get(s.task, 0) + s.points
    return points


def task_command(chapter: index.Chapter, task_id: str) -> str:
    """The command of a task's test: its public tests, summary first (``run_task``)."""
    return f"python -m grader.classroom50 {task_id}"


def task_timeout(tasks: int) -> int:
    """Seconds each of ``tasks`` task tests may take, so that they and the setup fit in
    one grading job (at most ``TASK_TIMEOUT``)."""
    share = (JOB_SECONDS - RUNNER_SECONDS - SETUP_TIMEOUT) // max(1, tasks)
    return min(TASK_TIMEOUT, share)


def tests_for(chapters: list[index.Chapter], specs) -> list[dict]:
    """The declarative tests of one assignment covering ``chapters``: the setup
    command, then one test per task that has public points."""
    points = public_points(specs)
    graded = [t for c in chapters for t in c.tasks if points.get(t.id)]
    timeout = max(1, task_timeout(len(graded)))
    tests = [
        {
            "name": "setup",
            "type": "run",
            "run": SETUP_COMMAND,
            "timeout": SETUP_TIMEOUT,
            "points": 0,
        }
    ]
    for chapter in chapters:
        for task in chapter.tasks:
            if points.get(task.id):
                tests.append(
                    {
                        "name": f"{task.id} {task.name}",
                        "type": "run",
                        "run": task_command(chapter, task.id),
                        "timeout": timeout,
                        "points": points[task.id],
                    }
                )
    return tests


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def problems(tests) -> list[str]:
    """Every way ``tests`` breaks Classroom 50's documented rules for the ``--tests``
    array (empty: it is valid)."""
    if not isinstance(tests, list):
        return ["the tests must be a JSON array"]
    found = []
    if len(tests) > MAX_TESTS:
        found.append(f"{len(tests)} tests: at most {MAX_TESTS} per assignment")
    seen: set[str] = set()
    for i, t in enumerate(tests):
        where = f"test {i}"
        if not isinstance(t, dict):
            found.append(f"{where}: not an object")
            continue
        name = t.get("name")
        if isinstance(name, str):
            where = f"test {i} ({name[:40]!r})"
        unknown = sorted(set(t) - FIELDS)
        if unknown:
            found.append(f"{where}: unknown field(s) {', '.join(unknown)}")
        for key in ("name", "type", "run"):
            if key not in t:
                found.append(f"{where}: {key} is required")
        if "name" in t:
            if not isinstance(name, str) or not name:
                found.append(f"{where}: name must be a non-empty string")
            else:
                if len(name.encode()) > NAME_MAX_BYTES:
                    found.append(f"{where}: name is over {NAME_MAX_BYTES} UTF-8 bytes")
                if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
                    found.append(f"{where}: name holds a control character")
                if name in seen:
                    found.append(f"{where}: name is not unique")
                seen.add(name)
        kind = t.get("type")
        if "type" in t and kind not in TYPES:
            found.append(f"{where}: type must be one of {', '.join(TYPES)}")
        if "run" in t and not (isinstance(t["run"], str) and t["run"]):
            found.append(f"{where}: run must be a non-empty command")
        if "setup" in t and not isinstance(t["setup"], str):
            found.append(f"{where}: setup must be a string")
        for key, (low, high) in (
            ("timeout", TIMEOUT_RANGE),
            ("points", POINTS_RANGE),
            ("exit-code", EXIT_CODE_RANGE),
        ):
            if key in t and not (_is_int(t[key]) and low <= t[key] <= high):
                found.append(f"{where}: {key} must be a whole number from {low} to {high}")
        if kind != "io":
            extra = [k for k in IO_ONLY if k in t]
            if extra:
                found.append(f"{where}: {', '.join(extra)} only belong to io tests")
        elif "comparison" not in t:
            found.append(f"{where}: an io test needs a comparison")
        if kind in ("io", "python") and "exit-code" in t:
            found.append(f"{where}: exit-code belongs to run tests only")
    setups = [i for i, t in enumerate(tests) if isinstance(t, dict) and t.get("name") == "setup"]
    if setups and (setups != [0] or tests[0].get("type") != "run" or tests[0].get("points")):
        found.append("the setup command must be the first test, a 0-point run test")
    return found


def job_problems(tests: list[dict]) -> list[str]:
    """Why ``tests`` would not fit in one grading job (empty: they fit): their declared
    timeouts (an absent one is the runner's 10 s) must add up to what the job leaves
    after the runner's own steps, without starving a test below ``MIN_TASK_TIMEOUT``."""
    found = []
    budget = sum(
        t["timeout"] if _is_int(t.get("timeout")) and t["timeout"] > 0 else 10
        for t in tests
        if isinstance(t, dict)
    )
    if budget > JOB_SECONDS - RUNNER_SECONDS:
        found.append(
            f"the timeouts add up to {budget} s, more than the {JOB_SECONDS - RUNNER_SECONDS} s "
            f"one grading job leaves them (of {JOB_SECONDS} s): register fewer tests per assignment"
        )
    short = [
        t.get("name")
        for t in tests[1:]
        if isinstance(t, dict) and _is_int(t.get("timeout")) and 0 < t["timeout"] < MIN_TASK_TIMEOUT
    ]
    if short:
        found.append(
            f"{len(short)} test(s) get under {MIN_TASK_TIMEOUT} s each to fit in one job: "
            "register fewer tests per assignment"
        )
    return found


README = """# Classroom 50

Declarative tests for [Classroom 50](https://github.com/foundation50/classroom50), written
by `python -m grader classroom50` (and into the student bundle's `classroom50/` by
`python -m grader release`). Use the student bundle as the assignment's template
repository; one assignment per chapter keeps each run well inside Classroom 50's
15-minute limit on a grading job:

```sh
gh teacher assignment add ORG CLASSROOM {first} --name "{first_title}" \\
    --template OWNER/BUNDLE-REPO --tests {first}.json --runtime runtime.json
```

{combined}

Each file starts with the setup command (a 0-point `run` test named `setup`: it installs
the course with the CPU build of torch and the pins of `constraints.txt`), then one `run`
test per task: the task's public tests, worth the task's public points when all of them
pass. These scores are advisory: the tests run in the student's own repository, which
Classroom 50 says is no isolation boundary. Grade for credit with
`python -m grader grade` (public and hidden tests, sandboxed).
"""


def write(out: Path, chapters: list[index.Chapter], specs) -> list[Path]:
    """Write the per-chapter files, the combined one, the runtime and the README."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter in chapters:
        tests = tests_for([chapter], specs)
        if len(tests) == 1:
            continue  # no task with public points
        wrong = problems(tests) + job_problems(tests)
        if wrong:
            raise ValueError(f"{chapter.id}: " + "; ".join(wrong))
        path = out / f"{chapter.id}.json"
        path.write_text(json.dumps(tests, indent=2) + "\n")
        written.append(path)
    combined = tests_for(chapters, specs)
    too_many = problems(combined) + job_problems(combined)
    if not too_many:
        path = out / "tests.json"
        path.write_text(json.dumps(combined, indent=2) + "\n")
        written.append(path)
    (out / "runtime.json").write_text(json.dumps(RUNTIME, indent=2) + "\n")
    first = chapters[0] if chapters else None
    (out / "README.md").write_text(
        README.format(
            first=first.id if first else "chNN",
            first_title=first.title if first else "",
            combined=(
                f"`tests.json` holds every chosen chapter as one assignment instead "
                f"({len(combined)} tests)."
                if (out / "tests.json").is_file()
                else f"The chosen chapters need {len(combined)} tests, more than one "
                f"assignment takes ({too_many[0]}): register them per chapter."
            ),
        )
    )
    return written + [out / "runtime.json", out / "README.md"]


# ---- the command each task's test runs ------------------------------------------------


def _section(lines: list[str], title: str) -> list[str]:
    """The lines of pytest's terminal section ``title`` (empty when there is none)."""
    for i, line in enumerate(lines):
        if re.fullmatch(rf"=+ {re.escape(title)} =+", line.strip()):
            rest = lines[i + 1 :]
            end = next((k for k, x in enumerate(rest) if x.startswith("=")), len(rest))
            return rest[:end]
    return []


def summary_first(output: str, task_id: str, code: int) -> str:
    """pytest's ``output`` of one task rearranged for a page that keeps its beginning:
    the task's state (the course plugin's "course tasks" lines: done, tests passing, the
    hint and the reading), pytest's counts, then the report itself."""
    lines = output.rstrip("\n").splitlines()
    head = [x for x in _section(lines, "course tasks") if x.strip()]
    if not head:  # no summary (pytest itself failed): the index's words
        try:
            task = index.task(task_id)
            head = [f"{task.id} {task.name}", f"          hint: {task.hint}"] if code else []
        except KeyError:
            head = []
    counts = next((x.strip("= ") for x in reversed(lines) if x.strip()), "")
    return "\n".join([*head, counts, "", "---- pytest's report ----", *lines]) + "\n"


def run_task(task_id: str, extra: list[str]) -> int:
    """``python -m grader.classroom50 TASK [pytest args]``: the task's public tests,
    printed summary first; pytest's exit status."""
    chapter = index.chapter(task_id.split(".")[0])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", f"exercises/{chapter.id}", "--task", task_id]
        + ["-q", "-p", "no:cacheprovider", *extra],
        capture_output=True,
        text=True,
    )
    sys.stdout.write(summary_first(proc.stdout + proc.stderr, task_id, proc.returncode))
    return proc.returncode


def main(out: Path, chapter_ids: list[str] | None) -> int:
    from grader import grade, score

    chapters = grade.choose_chapters(chapter_ids)
    specs = score.collect_expected(chapters)
    written = write(Path(out), chapters, specs)
    print(f"wrote {len(written)} Classroom 50 files to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_task(sys.argv[1], sys.argv[2:]))
