"""The Gradescope autograder, run as Gradescope runs it: the zip unpacked into a root laid
out like /autograder, ``run_autograder`` run on a complete, a partial, a hostile and an
empty upload, ``results.json`` checked against Gradescope's documented fields and
against ``grade`` on the same submissions."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from grader import collect, grade, gradescope, isolation, report
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import (
    SOLUTION,
    STUB,
    readable_python_prefix,
    results,
    with_override,
)

pytestmark = pytest.mark.timeout(900)
CHAPTERS = [index.chapter("ch00")]
PARTIAL = STUB.replace(
    '    raise NotImplementedError("ch00.1 gradient_at — see course/ch00.md#one-gradient")',
    "    return 2 * x * (x * w - target)",
)
HOSTILE = with_override(
    "import os as _os\n"
    "_seen = []\n"
    "for _dir, _subs, _files in _os.walk('AUTOGRADER_ROOT/source'):\n"
    "    _seen += _files\n"
    "if _seen:\n"
    "    raise RuntimeError('saw ' + ' '.join(_seen)[:200])\n"
    "def gradient_at(w, x, target):\n"
    "    _os._exit(0)\n"
)
UPLOADS = {  # student -> files as the student uploads them
    "complete": {"ch00/training_loop.py": SOLUTION},
    "partial": {"training_loop.py": PARTIAL, "notes.txt": "my notes"},
    "hostile": {"work/ch00/training_loop.py": HOSTILE},
    "empty": {"README.md": "nothing here"},
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return gradescope.build(tmp_path_factory.mktemp("bundle"), CHAPTERS)


def unpack(bundle: Path, root: Path) -> None:
    """Lay the zip out as Gradescope does: /autograder/source, /autograder/run_autograder."""
    source = root / "source"
    with zipfile.ZipFile(bundle) as z:
        for info in z.infolist():
            dest = source / info.filename
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(info))
            os.chmod(dest, (info.external_attr >> 16) & 0o777)
    (root / "run_autograder").write_bytes((source / "run_autograder").read_bytes())
    os.chmod(root / "run_autograder", 0o755)
    (root / "results").mkdir()


def run_autograder(
    bundle: Path, root: Path, files: dict[str, str], prefix: list[str] = (), **env
) -> dict:
    unpack(bundle, root)
    for rel, text in files.items():
        (root / "submission" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / rel).write_text(text.replace("AUTOGRADER_ROOT", str(root)))
    proc = subprocess.run(
        [*prefix, "bash", str(root / "run_autograder")],
        cwd=root,
        env={**os.environ, "AUTOGRADER_ROOT": str(root), "COURSE_PYTHON": sys.executable, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    STDOUT[root.name.split("-")[1]] = proc.stdout  # what Gradescope shows the staff only
    return json.loads((root / "results" / "results.json").read_text())


STDOUT: dict[str, str] = {}


@pytest.fixture(scope="module")
def graded(bundle):
    # Roots any user could walk into (as /autograder is), so only run_autograder's own
    # chmod keeps the course files from the submission.
    found = {}
    for student, files in UPLOADS.items():
        root = Path(tempfile.mkdtemp(prefix=f"autograder-{student}-"))
        os.chmod(root, 0o755)
        # Gradescope refuses namespaces: the hostile upload runs in that mode, with Python
        # readable by every user as setup.sh installs it (here it may sit under /root)
        uid = student == "hostile"
        extra = {"GRADER_ISOLATION": "uid"} if uid else {}
        prefix = readable_python_prefix() if uid else []
        try:
            found[student] = run_autograder(bundle, root, files, prefix, **extra)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return found


@pytest.fixture(scope="module")
def by_grade(tmp_path_factory):
    """``grade`` on the same work, laid out as chNN/<module>.py folders."""
    subs, out = tmp_path_factory.mktemp("subs"), tmp_path_factory.mktemp("out")
    for student, files in UPLOADS.items():
        for rel, text in files.items():
            if rel.endswith("training_loop.py"):
                (subs / student / "ch00").mkdir(parents=True)
                (subs / student / "ch00" / "training_loop.py").write_text(text)
        (subs / student).mkdir(exist_ok=True)
    found, _ = collect.discover(subs, CHAPTERS)
    grade.grade(found, out, CHAPTERS, jobs=2, progress_stream=io.StringIO(), gradebook=False)
    return out


def check_schema(data: dict) -> None:
    """Gradescope's documented results.json fields and types (no leaderboard)."""
    assert isinstance(data["score"], int | float)
    assert isinstance(data.get("execution_time", 0), int | float)
    assert isinstance(data.get("output", ""), str)
    assert data.get("visibility", "visible") in (
        "visible",
        "hidden",
        "after_due_date",
        "after_published",
    )
    assert data.get("stdout_visibility", "hidden") in (
        "visible",
        "hidden",
        "after_due_date",
        "after_published",
    )
    assert "leaderboard" not in data
    for t in data["tests"]:
        assert isinstance(t["name"], str) and isinstance(t["output"], str)
        assert isinstance(t["score"], int | float) and isinstance(t["max_score"], int | float)
        assert 0 <= t["score"] <= t["max_score"] or t["max_score"] == 0
        assert t["status"] in ("passed", "failed")
        assert t["visibility"] in ("visible", "hidden", "after_due_date", "after_published")
        assert re.fullmatch(r"\d+\.\d+", t["number"])
    assert data["score"] == sum(t["score"] for t in data["tests"])


# Gradescope's container runs the autograder as root; without root the grader falls back to
# the session mode, which does not hide the course's files from the hostile upload.
NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs it as root")


@pytest.mark.parametrize(
    "student", [pytest.param(s, marks=NEEDS_ROOT) if s == "hostile" else s for s in UPLOADS]
)
def test_results_follow_gradescopes_format_and_equal_grade(graded, by_grade, student):
    data = graded[student]
    check_schema(data)
    keys = ("name", "score", "max_score", "status", "visibility")
    assert [{k: t[k] for k in keys} for t in data["tests"]] == [
        {k: t[k] for k in keys} for t in results(by_grade, student)["tests"]
    ]


def test_a_complete_upload_scores_full_marks(graded):
    data = graded["complete"]
    assert data["score"] == sum(t["max_score"] for t in data["tests"]) > 0


def test_bare_module_files_map_to_their_chapter(graded):
    passed = {t["name"] for t in graded["partial"]["tests"] if t["status"] == "passed"}
    assert any("gradient_at" in name for name in passed)
    assert 0 < graded["partial"]["score"] < graded["complete"]["score"]


def test_an_upload_without_the_expected_files_says_so(graded):
    data = graded["empty"]
    assert data["score"] == 0
    assert "none of the files this assignment grades" in data["output"]
    assert "ch00/training_loop.py (or training_loop.py)" in data["output"]


@NEEDS_ROOT
def test_without_namespaces_student_code_still_runs_unprivileged_and_sees_no_course_file(graded):
    data = graded["hostile"]
    # The student reads one neutral line; what the mode lacks is for the staff.
    assert report.STUDENT_ISOLATION in data["output"], data["output"]
    assert "isolation" not in data["output"] and "namespaces" not in data["output"]
    assert f"isolation: {isolation.DESCRIPTION['uid']}" in STDOUT["hostile"]
    outputs = " ".join(t["output"] for t in data["tests"])
    assert "saw " not in outputs, "the submission could list the autograder's files"
    lost = [t for t in data["tests"] if t["status"] == "failed"]
    assert lost and all("gradient_at" in t["name"] or t["tags"] == ["ch00.1"] for t in lost)


def test_setup_installs_from_the_ci_constraints(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as z:
        names = z.namelist()
        setup = z.read("setup.sh").decode()
        mode = z.getinfo("run_autograder").external_attr >> 16
    assert {"setup.sh", "run_autograder"} <= set(
        names
    ) and "solutions/ch00/training_loop.py" in names
    assert mode & stat.S_IXUSR
    (tmp_path / "setup.sh").write_text(setup)
    subprocess.run(["bash", "-n", str(tmp_path / "setup.sh")], check=True)
    assert "-c /autograder/source/constraints.txt" in setup
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    install = setup[setup.index("pip install \\") :]
    for dep in deps:
        name = re.split(r"[<>=!~ ]", dep)[0]
        assert f" {name}" in install, f"setup.sh does not install {name}"
