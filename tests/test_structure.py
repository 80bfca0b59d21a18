"""Layout and contracts: stubs mirror solutions, the index matches the code and the
readings, and chapters stay self-contained."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
import sys

import pytest

from harness import index, returns
from harness.target import NAMED_TARGETS, REPO

CHAPTERS = list(index.chapters())


def _load(kind: str, chapter: index.Chapter):
    path = NAMED_TARGETS[kind] / chapter.id / f"{chapter.module}.py"
    name = f"_parity_{kind}_{chapter.id}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # @dataclass looks its module up by name
    spec.loader.exec_module(mod)
    return mod


def _public_api(mod) -> dict[str, tuple[str, str]]:
    """name -> (signature, docstring) for functions/classes defined in ``mod`` (and their methods)."""
    api = {}
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            try:
                sig = str(inspect.signature(obj))
            except (TypeError, ValueError):
                sig = "?"
            api[name] = (sig, inspect.getdoc(obj) or "")
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if inspect.isfunction(member) and (
                    not attr.startswith("_") or attr in ("__init__", "forward")
                ):
                    api[f"{name}.{attr}"] = (
                        str(inspect.signature(member)),
                        inspect.getdoc(member) or "",
                    )
    return api


def _anchors(markdown: str) -> set[str]:
    slugs = set()
    for line in markdown.splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            slugs.add(text.replace(" ", "-"))
        slugs.update(re.findall(r'<a (?:id|name)="([^"]+)"', line))
    return slugs


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_stub_and_solution_share_names_signatures_and_docstrings(chapter):
    chap = index.chapter(chapter)
    stub, solution = _public_api(_load("exercises", chap)), _public_api(_load("solutions", chap))
    assert sorted(stub) == sorted(solution), (
        f"{chapter}: public names differ — only in stub: {sorted(set(stub) - set(solution))}, "
        f"only in solution: {sorted(set(solution) - set(stub))}"
    )
    for name in solution:
        assert stub[name][0] == solution[name][0], (
            f"{chapter}.{name}: signature {stub[name][0]} != {solution[name][0]}"
        )
        assert stub[name][1] == solution[name][1], (
            f"{chapter}.{name}: stub and solution docstrings differ"
        )
        if "." not in name:
            assert solution[name][1], f"{chapter}.{name} has no docstring stating its contract"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_index_matches_code_and_reading(chapter):
    chap = index.chapter(chapter)
    solution = _load("solutions", chap)
    reading = REPO / "course" / f"{chapter}.md"
    assert reading.is_file(), f"{chapter} has no reading course/{chapter}.md"
    anchors = _anchors(reading.read_text())
    assert chap.tasks, f"course/{chapter}.toml declares no task"
    for t in chap.tasks:
        assert re.fullmatch(rf"{chapter}\.\d+", t.id), (
            f"task id {t.id!r} should look like {chapter}.N"
        )
        assert t.kind in index.KINDS, f"{t.id}: kind {t.kind!r} not one of {index.KINDS}"
        assert t.hint.strip(), f"{t.id} has no hint"
        assert t.points > 0, f"{t.id} is worth no points"
        assert hasattr(solution, t.name.split(".")[0]), f"{t.id}: the module defines no {t.name}"
        page, _, anchor = t.anchor.partition("#")
        assert page == f"course/{chapter}.md" and anchor in anchors, (
            f"{t.id}: anchor {t.anchor!r} is not a heading of course/{chapter}.md (have {sorted(anchors)})"
        )
    assert chap.public_tests.is_file(), f"{chapter}: missing {chap.public_tests.relative_to(REPO)}"
    assert chap.hidden_tests.is_file(), f"{chapter}: missing {chap.hidden_tests.relative_to(REPO)}"


def _definitions(tree: ast.Module) -> dict[str, ast.AST]:
    kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    return {n.name: n for n in tree.body if isinstance(n, kinds)}


def _reached(start: set[str], graph: dict[str, set[str]], stop: set[str]) -> set[str]:
    """Names reachable from ``start`` through ``graph``, not walking past ``stop``."""
    seen, stack = set(), list(start)
    while stack:
        name = stack.pop()
        if name not in seen:
            seen.add(name)
            if name not in stop:
                stack += graph.get(name, ())
    return seen


def _test_reach(chapter: index.Chapter) -> dict[str, set[str]]:
    """Per task, the names of the chapter's module its tests' code can touch (an
    over-approximation: every ``handle.name`` in the test, its helpers and probes)."""
    trees = [ast.parse(chapter.public_tests.read_text(encoding="utf-8"))]
    if chapter.hidden_tests.exists():
        trees.append(ast.parse(chapter.hidden_tests.read_text(encoding="utf-8")))
    handles, graph, attrs, tests = set(), {}, {}, []
    for tree in trees:
        for node in tree.body:
            call = getattr(node, "value", None)
            if isinstance(node, ast.Assign) and isinstance(call, ast.Call):
                if getattr(call.func, "id", "") == "chapter_module":
                    handles |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for tree in trees:
        for name, node in _definitions(tree).items():
            graph[name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            attrs[name] = {
                n.attr
                for n in ast.walk(node)
                if isinstance(n, ast.Attribute) and getattr(n.value, "id", None) in handles
            }
            marks = [d for d in getattr(node, "decorator_list", []) if isinstance(d, ast.Call)]
            for mark in marks:
                if getattr(mark.func, "attr", "") == "task" and name.startswith("test_"):
                    tests.append((mark.args[0].value, name))
    reach: dict[str, set[str]] = {t.id: set() for t in chapter.tasks}
    for task_id, name in tests:
        for reached in _reached({name}, graph, set()):
            reach[task_id] |= attrs.get(reached, set())
    return reach


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_task_declares_the_tasks_its_tests_rely_on(chapter):
    """``uses`` in course/chNN.toml is what names a failing task's first cause ("blocked by
    ch10.5"): every task the reference's code of a task calls must be reached through it, and
    nothing may be declared that neither that code nor the task's tests touch."""
    chap = index.chapter(chapter)
    by_name = {t.name: t.id for t in chap.tasks}
    solution = _definitions(
        ast.parse((REPO / "solutions" / chapter / f"{chap.module}.py").read_text(encoding="utf-8"))
    )
    graph = {n: {x.id for x in ast.walk(d) if isinstance(x, ast.Name)} for n, d in solution.items()}
    reach = _test_reach(chap)
    for t in chap.tasks:
        assert set(t.uses) <= set(by_name.values()) - {t.id}, f"{t.id}: uses {t.uses} unknown tasks"
        called = _reached(graph[t.name], graph, set(by_name) - {t.name}) - {t.name}
        needed = {by_name[n] for n in called if n in by_name}
        declared = set(index.relies_on(t.id))
        assert needed <= declared, (
            f"{t.id} {t.name} calls {sorted(needed - declared)} in the reference: add them to its "
            f"uses in course/{chapter}.toml"
        )
        touched = _reached(reach[t.id] | graph[t.name], graph, set(by_name) - {t.name})
        possible = {by_name[n] for n in touched if n in by_name} - {t.id}
        assert set(t.uses) <= possible, (
            f"{t.id} declares uses {sorted(set(t.uses) - possible)} that neither its reference "
            "code nor its tests touch"
        )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_repair_stubs_hold_the_broken_program(chapter):
    chap = index.chapter(chapter)
    text = (NAMED_TARGETS["exercises"] / chapter / f"{chap.module}.py").read_text()
    for t in chap.tasks:
        if t.kind == "repair":
            assert f"TODO({t.id}, repair)" in text, (
                f"{t.id}: the stub should mark the broken code with '# TODO({t.id}, repair)'"
            )
        else:
            assert f'"{t.id} ' in text or f"'{t.id} " in text, (
                f"{t.id}: the stub should raise NotImplementedError('{t.id} {t.name} — see {t.anchor}')"
            )


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("kind", ["exercises", "solutions"])
def test_chapter_modules_are_self_contained(chapter, kind):
    chap = index.chapter(chapter)
    tree = ast.parse((NAMED_TARGETS[kind] / chapter / f"{chap.module}.py").read_text())
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            assert top not in ("exercises", "solutions", "grader", "harness") and not re.fullmatch(
                r"ch\d+[a-z]?", top
            ), (
                f"{kind}/{chapter}/{chap.module}.py imports {name}: a chapter module may import only "
                "torch, numpy, matplotlib and the standard library, never another chapter or the course tooling"
            )


def test_the_untouched_repair_programs_are_recorded():
    """course/untouched.toml fingerprints each repair task's broken program as shipped."""
    expected = index.untouched_table()
    lines = "\n".join(
        f'"{k}" = {{ sites = {v["sites"]!r}, digest = "{v["digest"]}" }}'.replace("'", '"')
        for k, v in expected.items()
    )
    assert index.untouched() == expected, (
        f"update the [repair] table of course/untouched.toml:\n{lines}"
    )


def test_the_declared_result_types_are_the_stubs():
    """harness/declared.py, from which the harness checks every result's type, says what
    the stubs' signatures and records declare (never what a submission's module says)."""
    assert returns.table() == returns.table_from_stubs(), (
        "the stubs' declared result types changed: python -m harness.returns --write"
    )


def test_the_field_guide_links_to_sections_that_exist_and_names_real_tools():
    """course/field_guide.md: every link reaches a heading of a reading, and every tool
    it names is defined in that chapter's stub."""
    guide = (REPO / "course" / "field_guide.md").read_text()
    links = re.findall(r"\]\((ch\w+)\.md#([\w-]+)\)", guide)
    assert len(links) >= 30, "the field guide should point at the sections where tools were built"
    for chapter, anchor in links:
        text = (REPO / "course" / f"{chapter}.md").read_text()
        assert anchor in _anchors(text), f"field guide: {chapter}.md#{anchor} is not a heading"
    for row in re.findall(r"^\|.*\|$", guide, flags=re.M):
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("symptom", "---"):
            continue
        chapters = set(re.findall(r"\]\((ch\w+)\.md", cells[3]))
        names = re.findall(r"`(\w+)`", cells[3])
        assert chapters and names, f"field guide row without a tool and its chapter: {row}"
        for name in names:
            assert any(name in vars(_load("exercises", index.chapter(c))) for c in chapters), (
                f"field guide names {name}, which no stub of {sorted(chapters)} defines"
            )
    readme = (REPO / "course" / "README.md").read_text()
    assert "(field_guide.md)" in readme, "the students' front page should link the field guide"


def test_a_variants_edits_must_each_match_the_solution_exactly_once():
    from harness.selfcheck import apply_edits

    text = "a = 1\nb = 2\nb = 2\n"
    assert apply_edits(text, [("a = 1\n", "a = 3\n")], "v.py") == "a = 3\nb = 2\nb = 2\n"
    for old in ("c = 4\n", "b = 2\n"):  # missing, ambiguous
        with pytest.raises(ValueError, match="not once"):
            apply_edits(text, [(old, "")], "v.py")


def test_the_mutation_tools_given_code_is_what_the_stub_holds_unchanged(monkeypatch):
    """tests/mutants.py counts survivors in given code apart: only top-level code that the
    stub holds unchanged and that defines no task may be given."""
    spec = importlib.util.spec_from_file_location("mutants", REPO / "tests" / "mutants.py")
    mutants = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mutants", mutants)  # its dataclass looks itself up there
    spec.loader.exec_module(mutants)
    stub = (
        "import torch\n\ndef data():\n    return 1\n\ndef task():\n    raise NotImplementedError\n"
    )
    solution = "import torch\n\ndef data():\n    return 1\n\ndef task():\n    return 2\n"
    assert mutants.given_lines(stub, solution, {"task"}) == {1, 3, 4}
    changed = solution.replace("return 1", "return 3")
    assert mutants.given_lines(stub, changed, {"task"}) == {1}, "a changed definition is not given"
    same = stub  # a task the stub already holds (a repair whose fix is elsewhere) is still graded
    assert mutants.given_lines(stub, same, {"task", "data"}) == {1}
    for chapter in ("ch05a", "ch09"):
        chap = index.chapter(chapter)
        source = (REPO / "solutions" / chapter / f"{chap.module}.py").read_text()
        stub_text = (REPO / "exercises" / chapter / f"{chap.module}.py").read_text()
        tasks = {t.name for t in chap.tasks}
        given = mutants.given_lines(stub_text, source, tasks)
        for node in ast.parse(source).body:
            if getattr(node, "name", None) in tasks:
                assert not given & set(range(node.lineno, node.end_lineno + 1)), (
                    f"{chapter}: the task {node.name} must never count as given code"
                )


def _closure(names: list[str]) -> set[str]:
    """The installed distributions ``names`` need, themselves included (normalised names)."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()  # noqa: E731
    seen, todo = set(), [norm(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # an optional dependency that is not installed here
        seen.add(name)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(norm(req.name))
    return seen


def test_the_lock_pins_everything_the_grader_installs():
    """constraints.txt pins, with ==, every package in the dependency closure of what the
    Gradescope image installs, so its grades are made with CI's exact versions."""
    from grader import gradescope

    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    needed = _closure(list(gradescope.PACKAGES))
    assert {"torch", "numpy", "pytest", "hypothesis", "matplotlib"} <= needed
    loose = sorted(n for n in needed if not pins.get(n))
    assert not loose, f"constraints.txt does not pin {loose}: run `nox -s lock`"


def test_the_lock_installs_on_the_oldest_python_the_project_accepts():
    """Every pinned release that is installed here admits the oldest Python that
    ``requires-python`` allows (Debian 12's python3 is 3.11.2) and the Gradescope image's
    (Ubuntu 24.04: 3.12.3): a pin that needs a later one stops
    ``pip install -c constraints.txt`` there with a resolver error."""
    import importlib.metadata as md
    import tomllib

    from packaging.specifiers import SpecifierSet

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    floor = SpecifierSet(project["requires-python"])
    pythons = [next(v for v in ("3.11.0", "3.12.0", "3.13.0") if v in floor), "3.12.3"]
    narrower = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" not in line:
            continue
        name, _, version = line.partition("==")
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # not installed here (another extra)
        needs = SpecifierSet(dist.metadata.get("Requires-Python") or "")
        refused = [v for v in pythons if v not in needs]
        if dist.version == version and refused:
            narrower[name] = f"{needs} refuses {refused}"
    assert not narrower, (
        f"constraints.txt pins releases that some Python the course supports cannot install "
        f"(requires-python {floor}; Gradescope's 3.12.3): {narrower}; cap them in noxfile.py's "
        "lock session"
    )


def test_generated_examples_report_the_first_failure_as_drawn():
    """harness.generated.examples: a failing example is not shrunk (a wrong answer's
    shrinking could outlast the test's time limit) and is reported alone."""
    from harness.generated import examples, given, st

    calls = []

    @examples(20)
    @given(n=st.integers(0, 10_000), m=st.integers(0, 10_000))
    def fails_everywhere(n, m):
        calls.append((n, m))
        raise ValueError("wrong")

    with pytest.raises(ValueError):
        fails_everywhere()
    assert len(calls) <= 2, f"{len(calls)} runs: the failing example was shrunk"


def test_hidden_property_tests_take_their_settings_from_one_place():
    """Every @given test in grader/hidden is configured by harness.generated.examples,
    not by settings of its own (one mechanism: the same limits everywhere)."""
    local = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in sorted((REPO / "grader" / "hidden").glob("ch*/test_*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "settings"
    ]
    assert not local, f"hypothesis settings outside harness/generated.py: {local}"
