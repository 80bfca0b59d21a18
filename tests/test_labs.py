"""Every chapter's lab notebook runs to its end, headless, on the reference solutions and
on the untouched stubs (where it shows the TODOs instead of stopping), and every number
a lab checks is the number its chapter's reading quotes."""

from __future__ import annotations

import re
import subprocess

import pytest

from grader import labs
from harness import lab
from harness.target import REPO

pytestmark = pytest.mark.timeout(900)
LABS = {p.stem: p for p in labs.sources()}


@pytest.fixture(scope="module")
def printed_by_lab(tmp_path_factory) -> dict[str, tuple[list[str], list[str]]]:
    """chapter -> (lines its lab printed on the solutions, on the stubs), as
    ``python -m grader lab --run`` runs it (its figures go to a temporary folder, never into
    the repository). Every run shares one kernel, its names cleared before each
    (``labs.execute_in_turn``): a kernel and its ``import torch`` per lab were most of this
    file's time. A lab's error stays its own: it is raised by that chapter's test. Its
    closing ``lab.run_tests`` cell only names the pytest run it would make: what that run
    shows on stubs and solutions is ``tests/test_chapters.py``'s proof, and ``run_tests``
    itself is tested below."""
    chapters = sorted(LABS)
    runs = []
    for chapter in chapters:
        nb = labs.to_notebook(LABS[chapter].read_text())
        runs += [(nb, REPO / "solutions"), (nb, REPO / "exercises")]
    figures = tmp_path_factory.mktemp("figures")
    done = labs.execute_in_turn(runs, figures, {lab.TESTS_ENV: "name"}, keep_going=True)
    return {ch: (done[2 * k], done[2 * k + 1]) for k, ch in enumerate(chapters)}


@pytest.mark.parametrize("chapter", sorted(LABS))
def test_the_lab_runs_on_the_solutions_with_the_readings_numbers_and_on_the_stubs(
    chapter, printed_by_lab
):
    """On the reference solutions the lab runs to its end and every number it checks is the
    one its reading quotes; on the untouched stubs it runs to its end and shows the TODOs
    instead of stopping."""
    on_solutions, on_stubs = printed_by_lab[chapter]
    printed, on_stubs = labs.printed(on_solutions), labs.printed(on_stubs)
    reading = (REPO / "course" / f"{chapter}.md").read_text()
    checks = [ln for ln in printed if ln.startswith("check ")]
    assert checks, f"{chapter}'s lab checks no number of the reading"
    wrong = [ln for ln in checks if ln.split(": ", 1)[1] not in reading]
    assert not wrong, f"course/{chapter}.md does not quote what the lab prints: {wrong}"
    assert not any(ln.startswith("TODO") for ln in printed)
    assert_runs_its_own_tests(chapter, printed, "solutions")

    assert any(re.match(rf"TODO: implement {chapter}\.\d+", ln) for ln in on_stubs), on_stubs[-10:]
    assert_runs_its_own_tests(chapter, on_stubs, "exercises")


def assert_runs_its_own_tests(chapter: str, printed: list[str], impl: str) -> None:
    """The lab ends by running its own chapter's tests on the code it was run with."""
    wanted = f"tests not run here: pytest exercises/{chapter} --impl {REPO / impl}"
    assert wanted in printed, f"{chapter}'s lab does not end with lab.run_tests({chapter!r})"


@pytest.mark.parametrize("impl", ["exercises", "solutions"])
def test_run_tests_shows_the_chapters_task_summary(impl, monkeypatch, capsys):
    """What a lab's last cell shows: the student's own pytest run of the chapter, in plain
    text even where the kernel's environment asks for colour."""
    monkeypatch.setenv("COURSE_IMPL", str(REPO / impl))
    monkeypatch.delenv(lab.TESTS_ENV, raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("PY_COLORS", "1")
    code = lab.run_tests("ch00")
    shown = capsys.readouterr().out
    assert "\x1b[" not in shown, f"ANSI colour codes in a notebook's output: {shown[:300]!r}"
    lines = shown.strip().splitlines()
    assert "course tasks" in lines[0], lines
    if impl == "solutions":
        assert code == 0 and re.fullmatch(r"\d+ passed in .*", lines[-1]), lines
    else:
        assert code == 1 and " passed" not in lines[-1], lines
        assert any(re.match(r"ch00\.1 +gradient_at +not started \(TODO\)", ln) for ln in lines)


def test_the_release_ships_a_real_notebook_per_lab(tmp_path):
    import nbformat

    written = labs.write_notebooks(tmp_path)
    assert {p.stem for p in written} == set(LABS)
    for path in written:
        nbformat.validate(nbformat.read(path, as_version=4))
    for source in LABS.values():  # as the writer returns it, before any file round trip
        nbformat.validate(nbformat.from_dict(labs.to_notebook(source.read_text())))


def test_a_labs_figures_go_to_an_ignored_folder_not_where_it_was_started(monkeypatch, tmp_path):
    monkeypatch.delenv(lab.FIGURES_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    path = lab.figure_path("ch99_probe.png")
    assert path.parent == REPO / lab.OUTPUT, path
    path.write_bytes(b"not committed")
    try:
        ignored = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=REPO)
        assert ignored.returncode == 0, f"git would offer {path} for a commit"
    finally:
        path.unlink()
    assert not list(tmp_path.iterdir()), "the lab wrote into the folder it was started from"


def test_the_labs_folder_is_in_every_checkout():
    """labs-out/ ships with its .gitignore, so making it never adds a name to the course's
    root while another test watches a student's call for files it writes there."""
    tracked = subprocess.run(
        ["git", "ls-files", lab.OUTPUT], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert f"{lab.OUTPUT}/.gitignore" in tracked, f"{lab.OUTPUT}/.gitignore is not committed"
    assert (REPO / lab.OUTPUT / ".gitignore").read_text() == lab.IGNORE


def test_grader_lab_writes_the_notebook_and_says_how_to_open_or_run_it(monkeypatch, capsys):
    """Without JupyterLab installed, ``grader lab`` still builds the notebook and says how
    to go on; with it, it would open it (not started here)."""
    import builtins

    real_import = builtins.__import__

    def no_jupyterlab(name, *args, **kwargs):
        if name == "jupyterlab":
            raise ImportError("no jupyterlab here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jupyterlab)
    assert labs.main("ch07") == 0
    said = capsys.readouterr().out
    assert "python -m grader lab ch07 --run" in said and "labs" in said, said
    assert (REPO / lab.OUTPUT / "ch07.ipynb").is_file()
    assert labs.main("ch99") == 2


def test_the_readme_and_each_reading_say_how_to_run_the_lab():
    for page in ("README.md", "course/README.md"):
        assert "python -m grader lab " in (REPO / page).read_text(), f"{page} hides the labs"
    for chapter in LABS:
        reading = (REPO / "course" / f"{chapter}.md").read_text()
        assert f"python -m grader lab {chapter}" in reading, f"course/{chapter}.md hides its lab"
