"""Every sentence of a task's contract, traced to the tests that would fail if it were broken.

    python -m harness.clauses ch02            # what is missing or stale in ch02's table
    python -m harness.clauses ch02 --write    # rewrite tests/clauses/ch02.toml, keeping links

A contract is the task's docstrings (the stub and the solution share them; a class's
methods' too) and its section of the reading (from ``**Task chNN.K`` to the next task,
heading or fenced example). Each is cut into sentences — a bullet or a line ending in
``;`` is a sentence of its own — and each sentence is one clause of the chapter's table,
``tests/clauses/chNN.toml``::

    [[clause]]
    task = "ch00.4"
    source = "docstring"            # or "reading"
    text = "Returns ``path``."
    tests = ["test_plot_losses_returns_the_path_and_closes_its_figure"]
    invariant = "arguments unchanged"   # optional: the harness checks it on every call

``tests`` names test functions of the chapter's public or hidden file (without a
parametrize id). A sentence that states no property a program could break (advice,
history, a pointer to a figure) says why instead: ``not_a_contract = "advice"``.
``tests/test_clauses.py`` fails when a table is stale (a sentence added, changed or
removed), when a clause names no test and gives no reason, or when a named test does not
exist. ``--write`` keeps the links of every sentence whose text is unchanged.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from harness import index
from harness.target import REPO

TABLES = REPO / "tests" / "clauses"
INVARIANTS = (
    "arguments unchanged",
    "global state unchanged",
    "writes only where told",
    "results are the call's own",
)

# Abbreviations whose full stop ends no sentence.
_ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "etc.", "cf.", "approx.")


@dataclass
class Clause:
    task: str
    source: str
    text: str
    tests: list[str] = field(default_factory=list)
    invariant: str = ""
    not_a_contract: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.task, self.source, self.text)


# ---- cutting a contract into sentences ----------------------------------------------------


def _protect(text: str) -> tuple[str, list[str]]:
    """Code spans and abbreviations out of the way of the sentence splitter."""
    kept: list[str] = []

    def hold(m: re.Match) -> str:
        kept.append(m.group(0))
        return f"\x00{len(kept) - 1}\x00"

    text = re.sub(r"``.*?``|`[^`]*`", hold, text)
    for abbr in _ABBREVIATIONS:
        text = text.replace(abbr, hold(re.match(re.escape(abbr), abbr)))
    return text, kept


def _restore(text: str, kept: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text)


def sentences(block: str) -> list[str]:
    """The sentences of a paragraph (its lines joined), each stripped."""
    text, kept = _protect(" ".join(line.strip() for line in block.splitlines()))
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z\x00(\"*_])", text)
    return [_restore(p, kept).strip() for p in parts if p.strip()]


def _blocks(text: str) -> list[str]:
    """Paragraphs and bullets: a bullet is a block of its own; a docstring line that ends
    with ``;`` or ``:`` followed by a list-like line ends its block too."""
    blocks, current = [], []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            if current:
                blocks.append("\n".join(current))
            current = []
            continue
        if stripped.startswith(("- ", "* ")) and current:
            blocks.append("\n".join(current))
            current = []
        current.append(stripped.removeprefix("- ").removeprefix("* "))
        if stripped.endswith(";"):
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


def split(text: str) -> list[str]:
    return [s for block in _blocks(text) for s in sentences(block)]


# ---- where contracts are written ------------------------------------------------------------


def docstrings(chapter: str) -> dict[str, list[str]]:
    """task id -> the docstrings of its definition (a class's methods' after its own)."""
    chap = index.chapter(chapter)
    tree = ast.parse((REPO / "solutions" / chapter / f"{chap.module}.py").read_text())
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    found = {}
    for task in chap.tasks:
        node = defs.get(task.name)
        if node is None:
            continue
        docs = [ast.get_docstring(node) or ""]
        if isinstance(node, ast.ClassDef):
            docs += [
                ast.get_docstring(m) or "" for m in node.body if isinstance(m, ast.FunctionDef)
            ]
        found[task.id] = [d for d in docs if d]
    return found


_TASK_START = re.compile(r"\*\*Task (ch\w+\.\d+)\b")


def _table_rows(lines: list[str]) -> list[str]:
    """A markdown table's rows as bullets (``- a — b — c``), its header and rule dropped."""
    out = []
    for k, line in enumerate(lines):
        if not line.startswith("|"):
            out.append(line)
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        is_rule = all(set(c) <= set("-: ") for c in cells)
        after = lines[k + 1] if k + 1 < len(lines) else ""
        is_header = after.startswith("|") and set(after.replace("|", "").strip()) <= set("-: ")
        if not (is_rule or is_header):
            out.append("- " + " — ".join(cells))
    return out


def reading_sections(chapter: str) -> dict[str, str]:
    """task id -> its section of the reading: from ``**Task chNN.K`` to the next task, heading,
    fenced example, figure or prediction prompt; a table's rows count as bullets."""
    lines = (REPO / "course" / f"{chapter}.md").read_text().splitlines()
    found: dict[str, list[str]] = {}
    current = None
    for line in lines:
        start = _TASK_START.search(line)
        if start:
            current = start.group(1)
            found.setdefault(current, []).append(line[start.start() :])
            continue
        if current and line.startswith(("#", "```", "**Predict", "![")):
            current = None
        if current:
            found[current].append(line)
    return {task: "\n".join(_table_rows(body)) for task, body in found.items()}


def current_clauses(chapter: str) -> list[Clause]:
    """The chapter's clauses as its docstrings and reading state them today."""
    out: list[Clause] = []
    seen: set[tuple[str, str, str]] = set()
    docs = docstrings(chapter)
    reading = reading_sections(chapter)
    for task in index.chapter(chapter).tasks:
        for source, texts in (
            ("docstring", docs.get(task.id, [])),
            ("reading", [reading.get(task.id, "")]),
        ):
            for text in texts:
                for sentence in split(text):
                    clause = Clause(task.id, source, sentence)
                    if clause.key not in seen:
                        seen.add(clause.key)
                        out.append(clause)
    return out


# ---- the table -----------------------------------------------------------------------------


def table_path(chapter: str) -> Path:
    return TABLES / f"{chapter}.toml"


def load(chapter: str) -> list[Clause]:
    path = table_path(chapter)
    if not path.exists():
        return []
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [
        Clause(
            c["task"],
            c["source"],
            c["text"],
            list(c.get("tests", [])),
            c.get("invariant", ""),
            c.get("not_a_contract", ""),
        )
        for c in data.get("clause", [])
    ]


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dump(chapter: str, clauses: list[Clause]) -> str:
    lines = [
        f"# {chapter}: every sentence of every task's contract and the tests that fail when it",
        "# is broken. Regenerate with `python -m harness.clauses " + chapter + " --write`",
        "# (links of unchanged sentences are kept); see harness/clauses.py.",
    ]
    for c in clauses:
        lines += ["", "[[clause]]", f"task = {_quote(c.task)}", f"source = {_quote(c.source)}"]
        lines.append(f"text = {_quote(c.text)}")
        tests = ", ".join(_quote(t) for t in c.tests)
        lines.append(f"tests = [{tests}]")
        if c.invariant:
            lines.append(f"invariant = {_quote(c.invariant)}")
        if c.not_a_contract:
            lines.append(f"not_a_contract = {_quote(c.not_a_contract)}")
    return "\n".join(lines) + "\n"


def merged(chapter: str) -> list[Clause]:
    """Today's clauses, each with the links its sentence had in the table."""
    old = {c.key: c for c in load(chapter)}
    out = []
    for c in current_clauses(chapter):
        was = old.get(c.key)
        if was is not None:
            c.tests, c.invariant, c.not_a_contract = was.tests, was.invariant, was.not_a_contract
        out.append(c)
    return out


def test_names(chapter: str) -> dict[str, set[str]]:
    """Test function name -> the tasks its markers name, over the chapter's test files."""
    chap = index.chapter(chapter)
    found: dict[str, set[str]] = {}
    for path in (chap.public_tests, chap.hidden_tests):
        if not path.exists():
            continue
        tree = ast.parse(path.read_text())
        module_task = set()
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                getattr(t, "id", "") == "pytestmark" for t in node.targets
            ):
                module_task |= set(re.findall(r"ch\w+\.\d+", ast.unparse(node.value)))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                tasks = set(re.findall(r"task\(\s*[\"'](ch\w+\.\d+)", ast.unparse(node)))
                found.setdefault(node.name, set()).update(tasks or module_task)
    return found


def problems(chapter: str) -> list[str]:
    """What is wrong with the chapter's table (empty when it is complete and current)."""
    table = load(chapter)
    now = current_clauses(chapter)
    out = []
    if [c.key for c in table] != [c.key for c in now]:
        gone = {c.key for c in table} - {c.key for c in now}
        new = {c.key for c in now} - {c.key for c in table}
        for task, source, text in sorted(new)[:5]:
            out.append(f"{task} {source}: a sentence the table lacks: {text!r}")
        for task, source, text in sorted(gone)[:5]:
            out.append(f"{task} {source}: the table holds a sentence no longer there: {text!r}")
        if not gone and not new:
            out.append("the table's sentences are out of order")
        out.append(f"regenerate it: python -m harness.clauses {chapter} --write")
    names = test_names(chapter)
    for c in table:
        where = f"{c.task} {c.source} {c.text[:60]!r}"
        if not c.tests and not c.not_a_contract:
            out.append(f"{where}: no test named, and no reason it states no contract")
        for t in c.tests:
            if t not in names:
                out.append(f"{where}: names {t!r}, which is no test of {chapter}")
        if c.invariant and c.invariant not in INVARIANTS:
            out.append(f"{where}: {c.invariant!r} is not one of {INVARIANTS}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", metavar="chapter")
    parser.add_argument("--write", action="store_true", help="rewrite the tables, keeping links")
    args = parser.parse_args(argv)
    chapters = args.chapters or list(index.chapters())
    bad = 0
    for chapter in chapters:
        if args.write:
            TABLES.mkdir(parents=True, exist_ok=True)
            table_path(chapter).write_text(dump(chapter, merged(chapter)), encoding="utf-8")
        found = problems(chapter)
        clauses = load(chapter)
        open_ = sum(1 for c in clauses if not c.tests and not c.not_a_contract)
        print(f"{chapter}: {len(clauses)} clauses, {open_} without a test or a reason")
        for p in found[:40]:
            print(f"  {p}")
        bad += bool(found)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
