"""The course as the grader runs it: every chapter's tests split across a trusted test
process and the student's processes give the same verdicts as in one process — every
test passes on the reference solutions and fails on the stubs."""

from __future__ import annotations

import io

import pytest

from grader import collect, grade
from harness import index
from harness.target import NAMED_TARGETS
from tests.grader_data.helpers import results

pytestmark = pytest.mark.timeout(1800)
CHAPTERS = list(index.chapters().values())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs, out = tmp_path_factory.mktemp("subs"), tmp_path_factory.mktemp("out")
    for student, root in (
        ("solutions", NAMED_TARGETS["solutions"]),
        ("stubs", NAMED_TARGETS["exercises"]),
    ):
        for c in CHAPTERS:
            module = root / c.id / f"{c.module}.py"
            (subs / student / c.id).mkdir(parents=True)
            (subs / student / c.id / module.name).write_bytes(module.read_bytes())
    found, _ = collect.discover(subs, CHAPTERS)
    progress = io.StringIO()
    grade.grade(found, out, CHAPTERS, jobs=2, progress_stream=progress, gradebook=False)
    assert "error:" not in progress.getvalue(), progress.getvalue()[-4000:]
    return out


def by_chapter(out, student: str, chapter: str) -> list[dict]:
    return [t for t in results(out, student)["tests"] if t["name"].startswith(f"{chapter} ")]


@pytest.mark.parametrize("chapter", [c.id for c in CHAPTERS])
def test_every_test_passes_on_the_solutions_when_split(graded, chapter):
    tests = by_chapter(graded, "solutions", chapter)
    assert tests, f"{chapter}: no tests were graded"
    wrong = [
        f"{t['name']}: {t['output'][:300]}"
        for t in tests
        if t["status"] != "passed" and "not graded on this machine" not in t["output"]
    ]
    assert not wrong, f"{chapter} fails on the reference solution when split:\n" + "\n".join(wrong)


@pytest.mark.parametrize("chapter", [c.id for c in CHAPTERS])
def test_every_test_fails_on_the_stubs_when_split(graded, chapter):
    tests = by_chapter(graded, "stubs", chapter)
    assert tests, f"{chapter}: no tests were graded"
    wrong = [t["name"] for t in tests if t["status"] == "passed" and t["max_score"]]
    assert not wrong, f"{chapter} passes on the stubs when split: {wrong}"


def test_the_students_side_keeps_setup_code_and_what_it_calls(tmp_path):
    """A module-level call runs in the student's process too, with the helper it calls
    (declared in PROBES_USE) — and a test's body and expected values never do."""
    from harness import strip

    path = tmp_path / "test_x.py"
    path.write_text(
        '"""doc"""\n'
        "import torch\n"
        "from harness.probe import probe\n"
        'PROBES_USE = "configure"\n'
        "def configure():\n"
        "    torch.set_num_threads(1)\n"
        "configure()\n"
        "EXPECTED = 42\n"
        "@probe\n"
        "def observe():\n"
        "    return 1\n"
        "def test_x():\n"
        "    assert observe() == EXPECTED\n"
    )
    side = strip.student_side({"exercises/chXX/test_x.py": path}, hidden=False)
    text = side["exercises/chXX/test_x.py"]
    assert "def configure" in text and "configure()" in text and "def observe" in text
    assert "EXPECTED" not in text and "def test_x" not in text
    assert len(text.splitlines()) == len(path.read_text().splitlines()), "line numbers are kept"


def test_a_broken_chapters_error_does_not_grow_with_every_test(tmp_path):
    """Every call into a chapter whose import failed gets the same error; its traceback
    is that call's, not one that grows by a call's frames for every test of the chapter."""
    from grader.verdict import SplitTransport
    from harness.probe import StudentCrashed

    config = {"students": {}, "modules": {}, "test_timeout": 1, "log": tmp_path / "log",
              "work": tmp_path}  # fmt: skip
    transport = SplitTransport(client=None, config=config)
    transport.broken["ch00"] = StudentCrashed("ImportCrash", "importing ch00 ended its process")
    depths = []
    for _ in range(20):
        transport.begin_test("exercises/ch00/test_training_loop.py::test_x", None)
        with pytest.raises(StudentCrashed) as info:
            transport._ask({"op": "call"})
        depths.append(len(info.traceback))
    assert depths[-1] == depths[0], f"traceback frames per call: {depths}"
