"""Every chapter's lab notebook runs to its end, headless, on the reference solutions and
on the untouched stubs (where it shows the TODOs instead of stopping), and every number
a lab checks is the number its chapter's reading quotes."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile

import pytest

from grader import labs
from harness import lab
from harness.target import REPO

pytestmark = pytest.mark.timeout(900)
LABS = {p.stem: p for p in labs.sources()}


def execute(source, impl: str, figures) -> list[str]:
    """Run the lab as a notebook in a fresh kernel (its figures go to ``figures``, never
    into the repository); every line it printed. Its closing ``lab.run_tests`` cell only
    names the pytest run it would make: what that run shows on stubs and solutions is
    ``tests/test_chapters.py``'s proof, and ``run_tests`` itself is tested below."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.reads(json.dumps(labs.to_notebook(source.read_text())), as_version=4)
    settings = {
        "COURSE_IMPL": str(impl),
        "OMP_NUM_THREADS": "1",
        lab.FIGURES_ENV: str(figures),
        lab.TESTS_ENV: "name",  # the lab's pytest run: proven apart, below and per chapter
    }
    saved = {key: os.environ.get(key) for key in settings}
    os.environ.update(settings)
    # The kernel talks over Unix sockets, not TCP: a port picked as free can be taken by
    # another test's process before the kernel binds it ("Address already in use").
    sockets = tempfile.mkdtemp(prefix="lab-kernel-")
    kernel = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k"))
    try:
        NotebookClient(
            nb, timeout=600, km=kernel, resources={"metadata": {"path": str(REPO)}}
        ).execute()
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    printed = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                printed += output["text"].splitlines()
            assert output.get("output_type") != "error", (
                f"{source.name}: {output.get('ename')}: {output.get('evalue')}"
            )
    return printed


@pytest.mark.parametrize("chapter", sorted(LABS))
def test_the_lab_runs_on_the_solutions_and_its_numbers_are_the_readings(chapter, tmp_path):
    printed = execute(LABS[chapter], REPO / "solutions", tmp_path)
    reading = (REPO / "course" / f"{chapter}.md").read_text()
    checks = [ln for ln in printed if ln.startswith("check ")]
    assert checks, f"{chapter}'s lab checks no number of the reading"
    wrong = [ln for ln in checks if ln.split(": ", 1)[1] not in reading]
    assert not wrong, f"course/{chapter}.md does not quote what the lab prints: {wrong}"
    assert not any(ln.startswith("TODO") for ln in printed)
    assert_runs_its_own_tests(chapter, printed, "solutions")


@pytest.mark.parametrize("chapter", sorted(LABS))
def test_the_lab_runs_to_its_end_on_the_stubs_and_shows_the_todos(chapter, tmp_path):
    printed = execute(LABS[chapter], REPO / "exercises", tmp_path)
    assert any(re.match(rf"TODO: implement {chapter}\.\d+", ln) for ln in printed), printed[-10:]
    assert_runs_its_own_tests(chapter, printed, "exercises")


def assert_runs_its_own_tests(chapter: str, printed: list[str], impl: str) -> None:
    """The lab ends by running its own chapter's tests on the code it was run with."""
    wanted = f"tests not run here: pytest exercises/{chapter} --impl {REPO / impl}"
    assert wanted in printed, f"{chapter}'s lab does not end with lab.run_tests({chapter!r})"


@pytest.mark.parametrize("impl", ["exercises", "solutions"])
def test_run_tests_shows_the_chapters_task_summary(impl, monkeypatch, capsys):
    """What a lab's last cell shows: the student's own pytest run of the chapter."""
    monkeypatch.setenv("COURSE_IMPL", str(REPO / impl))
    monkeypatch.delenv(lab.TESTS_ENV, raising=False)
    code = lab.run_tests("ch00")
    lines = capsys.readouterr().out.strip().splitlines()
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
