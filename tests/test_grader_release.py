"""The student release holds stubs, public tests, readings and project config, and no
solution code and no hidden test."""

from __future__ import annotations

import pytest

from grader import release
from harness import index
from harness.target import REPO

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "bundle"
    assert release.main(out) == 0
    return out


def test_bundle_holds_stubs_public_tests_readings_and_config(bundle):
    for chapter in index.chapters().values():
        stub = REPO / "exercises" / chapter.id / f"{chapter.module}.py"
        if stub.is_file():
            assert (bundle / stub.relative_to(REPO)).read_bytes() == stub.read_bytes()
        if chapter.public_tests.is_file():
            assert (bundle / chapter.public_tests.relative_to(REPO)).is_file()
        assert (bundle / "course" / f"{chapter.id}.toml").is_file()
    assert (bundle / "course" / "ch00.md").is_file()
    for name in ("pyproject.toml", "conftest.py"):
        assert (bundle / name).is_file()
    assert (bundle / "harness" / "plugin.py").is_file()


def test_bundle_holds_no_solution_and_no_hidden_test(bundle):
    assert not (bundle / "solutions").exists()
    assert not (bundle / "grader" / "hidden").exists()
    assert not (bundle / "grader" / "bugzoo").exists()
    assert release.leaks(bundle) == []
    solutions = {p.read_bytes() for p in (REPO / "solutions").rglob("*.py")}
    hidden = {p.read_bytes() for p in (REPO / "grader" / "hidden").rglob("*.py")}
    for path in bundle.rglob("*"):
        if path.is_file():
            assert path.read_bytes() not in solutions | hidden, path


def test_the_leak_check_catches_a_solution_body_and_a_hidden_test(tmp_path):
    out = tmp_path / "bundle"
    release.build(out)
    solution = (REPO / "solutions" / "ch00" / "training_loop.py").read_text()
    (out / "exercises" / "ch00" / "training_loop.py").write_text(solution + "\n# edited\n")
    (out / "notes.md").write_text("see test_gradient_at_random_points\n")
    problems = release.leaks(out)
    assert any("solution function body" in p for p in problems)
    assert any("hidden test" in p for p in problems)


def test_the_leak_check_reads_a_lab_notebooks_code_cells(tmp_path):
    import json

    out = tmp_path / "bundle"
    release.build(out)
    solution = (REPO / "solutions" / "ch02" / "autograd.py").read_text()
    lab = out / "labs" / "ch02.ipynb"
    nb = json.loads(lab.read_text())
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": solution, "outputs": []})
    nb["cells"].append({"cell_type": "code", "metadata": {}, "source": "%matplotlib inline"})
    lab.write_text(json.dumps(nb))
    assert any(p.startswith("labs/ch02.ipynb: holds a solution") for p in release.leaks(out))


def test_release_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "x").write_text("")
    with pytest.raises(SystemExit):
        release.build(tmp_path)


def test_bundle_front_page_and_config_are_for_students(bundle):
    readme = (bundle / "README.md").read_text()
    assert "for students" in readme and "](course/ch02.md)" in readme
    assert "grader/hidden" not in readme and "solutions/" not in readme
    assert 'testpaths = ["exercises"]' in (bundle / "pyproject.toml").read_text()


def test_the_bundle_carries_classroom50_tests_and_not_the_retired_workflow(bundle):
    """GitHub Classroom is retired: no workflow for it; Classroom 50's declarative tests
    instead (their content is checked in tests/test_classroom50.py)."""
    import json

    from grader import classroom50

    assert not (bundle / ".github").exists()
    folder = bundle / release.CLASSROOM50
    assert (folder / "runtime.json").is_file() and (folder / "README.md").is_file()
    for chapter in index.chapters().values():
        tests = json.loads((folder / f"{chapter.id}.json").read_text())
        assert classroom50.problems(tests) == [] and len(tests) > 1, chapter.id
