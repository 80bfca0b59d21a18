"""The student bundle: stubs, public tests, readings, the harness and project config,
Classroom 50's declarative tests (``classroom50/``), a lab notebook per chapter that has
one — no solution code and no hidden test.

    python -m grader release OUT

Files are chosen by an allow-list (never "everything but ..."), then the bundle is
checked: no file equals a solution or hidden-test file, no function body that differs
between solution and stub appears in any released Python file, and no hidden test's
name appears anywhere. A bundle that fails the check is not left behind.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from pathlib import Path

from harness import index
from harness.target import REPO

TOP_FILES = ("pyproject.toml", "constraints.txt", "conftest.py", ".gitignore")
# The bundle's front page is the students' guide, not the developers' README.
STUDENT_README = REPO / "course" / "README.md"


# Folders of grader/ that hold no part of the grader's code: never bundled as such.
NOT_GRADER_CODE = ("hidden", "alternatives", "bugzoo", "demo")


def grader_modules() -> list[Path]:
    """The grader's own Python files: its modules and its packages (``isolation/``), never
    the hidden tests, the bug zoo, the alternatives or the demo students."""
    grader = REPO / "grader"
    files = sorted(grader.glob("*.py"))
    for init in sorted(grader.glob("*/__init__.py")):
        if init.parent.name not in NOT_GRADER_CODE:
            files += sorted(init.parent.glob("*.py"))
    return files


def release_files() -> list[Path]:
    """Every file of the bundle, as paths inside REPO."""
    files = [REPO / name for name in TOP_FILES if (REPO / name).is_file()]
    files += sorted((REPO / "harness").glob("*.py"))
    files += grader_modules()  # `python -m grader check` (public tests)
    for chapter in index.chapters().values():
        folder = REPO / "exercises" / chapter.id
        files += [p for p in (folder / f"{chapter.module}.py", chapter.public_tests) if p.is_file()]
    course = REPO / "course"
    files += sorted(course.glob("*.md")) + sorted(course.glob("*.toml"))
    files += sorted(p for p in course.glob("*/*.md") if p.is_file())
    files += sorted((course / "figures").glob("*.png"))
    if (course / "data").is_dir():
        files += sorted(p for p in (course / "data").rglob("*") if p.is_file())
    return [p for p in files if not p.is_symlink()]


def _functions(source: str) -> dict[str, str]:
    """qualified name -> normalized body source of every function in ``source``."""
    found = {}

    def walk(node, prefix=""):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                body = child.body
                if (
                    body
                    and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                ):
                    body = body[1:]  # the docstring is shared by stub and solution
                found[prefix + child.name] = "\n".join(ast.unparse(s) for s in body)
                walk(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")

    walk(ast.parse(source))
    return found


def secrets() -> tuple[list[str], list[str], list[bytes]]:
    """(solution-only function bodies, hidden test names, whole secret files' bytes)."""
    bodies, names, blobs = [], [], []
    for chapter in index.chapters().values():
        solution = REPO / "solutions" / chapter.id / f"{chapter.module}.py"
        stub = REPO / "exercises" / chapter.id / f"{chapter.module}.py"
        if solution.is_file():
            blobs.append(solution.read_bytes())
            stub_funcs = _functions(stub.read_text()) if stub.is_file() else {}
            for name, body in _functions(solution.read_text()).items():
                if body != stub_funcs.get(name) and len(body.splitlines()) >= 2:
                    bodies.append(body)
        if chapter.hidden_tests.is_file():
            blobs.append(chapter.hidden_tests.read_bytes())
            names += [
                n for n in _functions(chapter.hidden_tests.read_text()) if n.startswith("test_")
            ]
    return bodies, names, blobs


def _code_of(path: Path, data: bytes) -> str:
    """The Python source of a released file: a module, or a notebook's code cells (a lab
    must not hand out a solution either)."""
    if path.suffix != ".ipynb":
        return data.decode()
    cells = json.loads(data)["cells"]
    code = ["".join(c["source"]) for c in cells if c.get("cell_type") == "code"]
    # Cells may hold IPython-only lines; keep the ones that parse.
    kept = []
    for cell in code:
        try:
            ast.parse(cell)
        except SyntaxError:
            continue
        kept.append(cell)
    return "\n\n".join(kept)


def leaks(out: Path) -> list[str]:
    """Every trace of solution code or hidden tests found in the bundle at ``out``."""
    bodies, names, blobs = secrets()
    found = []
    for path in sorted(p for p in Path(out).rglob("*") if p.is_file()):
        rel = path.relative_to(out)
        if rel.parts[0] == "solutions" or rel.parts[:2] in (
            ("grader", "hidden"),
            ("grader", "bugzoo"),
            ("grader", "alternatives"),
        ):
            found.append(f"{rel}: a solution or hidden-test location")
        data = path.read_bytes()
        if data in blobs:
            found.append(f"{rel}: identical to a solution or hidden-test file")
        if path.suffix in (".py", ".ipynb"):
            try:
                released = set(_functions(_code_of(path, data)).values())
            except (SyntaxError, ValueError):
                released = set()
            found += [f"{rel}: holds a solution function body" for b in bodies if b in released]
        text = data.decode(errors="replace")
        found += [f"{rel}: names the hidden test {n}" for n in names if n in text]
    return found


# Classroom 50's declarative tests (grader/classroom50.py). The retired GitHub
# Classroom workflow is no longer shipped: its reporter action is deprecated, and under
# Classroom 50 a template's own workflow would run every push a second time.
CLASSROOM50 = "classroom50"


def build(out: Path) -> list[Path]:
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} exists and is not empty; choose a new folder")
    written = []
    for path in release_files():
        dest = out / path.relative_to(REPO)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        written.append(dest)
    if STUDENT_README.is_file():
        # Links in it are relative to course/; at the top they point into course/.
        text = STUDENT_README.read_text()
        text = re.sub(r"\]\((ch\w+\.md)\)", r"](course/\1)", text)
        (out / "README.md").write_text(text)
        written.append(out / "README.md")
    from grader import classroom50, labs, score

    written += labs.write_notebooks(out)  # labs/chNN.ipynb, from course/labs/chNN.py
    chapters = list(index.chapters().values())
    written += classroom50.write(out / CLASSROOM50, chapters, score.collect_expected(chapters))
    pyproject = out / "pyproject.toml"
    if pyproject.is_file():
        # Students have exercises/, not the developers' tests/: a bare `pytest` runs their tests.
        pyproject.write_text(
            pyproject.read_text().replace('testpaths = ["tests"]', 'testpaths = ["exercises"]')
        )
    return written


def main(out: Path) -> int:
    written = build(out)
    problems = leaks(out)
    if problems:
        shutil.rmtree(out)
        print("release refused, the bundle would leak:\n" + "\n".join(problems), file=sys.stderr)
        return 1
    print(f"wrote the student bundle to {out} ({len(written)} files)", file=sys.stderr)
    return 0
