"""Every writer of the grader's outputs, fed a class whose names, failure messages, notes
and refused zip entries are hostile (HTML tags, Markdown links and images, table pipes,
newlines, ANSI escapes, cells that start like spreadsheet formulas). Each output is read
the way its reader reads it: Markdown rendered by a CommonMark renderer with GitHub's
tables, CSV by the csv module as a spreadsheet splits it, results.json as Gradescope
takes it. Nothing a student wrote may become markup, a link, an image, a formula or a
terminal escape, and every name is shown as it was. Built in memory: nothing is graded."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path

import pytest

from grader import escape, outputs, regrade, score
from harness import index

markdown_it = pytest.importorskip("markdown_it")

TRACKER = "http://tracker.example/t.png"
EVIL = "http://evil.example/approve"
HOSTILE_NAMES = [
    f'<img src="{TRACKER}">',
    f"[Regrade approved]({EVIL})",
    f"![pixel]({TRACKER})",
    "a | b | c",
    "two\nlines # and - a list",
    "\x1b[31mred\x1b[0m",
    '=HYPERLINK("http://evil.example","click")',
    "+1-2",
    "-3",
    "@SUM(A1)",
    "\ttab",
    "\rcarriage",
    "Zoë Åström",
    "`code` *stars* _under_",
]
HOSTILE_TEXT = (
    f'raised ValueError: <img src="{TRACKER}"> [Regrade approved]({EVIL}) '
    f'![i]({TRACKER}) a | b\n# not a heading\n\x1b[2J\x1b[31mred <a href="{EVIL}">x</a>'
)
ZIP_ENTRY = f"zip entry '/<a href=\"{EVIL}\">Regrade approved</a>' refused: absolute path"
CHAPTER = index.chapter("ch00")


def specs() -> list[score.TestSpec]:
    tasks = [t.id for t in CHAPTER.tasks]
    return [
        score.TestSpec(
            f"{'grader/hidden' if hidden else 'exercises'}/ch00/test_t.py::test_{k}",
            "ch00",
            f"test_{k}",
            tasks[k % len(tasks)],
            2,
            False,
            hidden,
            "a property holds.",
        )
        for k in range(4)
        for hidden in (False, True)
    ]


def entry(name: str, k: int) -> dict:
    records = {}
    for n, s in enumerate(specs()):
        records[s.nodeid] = (
            {"outcome": "passed"}
            if (n + k) % 3 == 0
            else {"outcome": "failed", "category": "raised", "message": HOSTILE_TEXT}
        )
    return {
        "key": f"new:{k}",
        "name": name,
        "records": records,
        "notes": [ZIP_ENTRY, f"note about {HOSTILE_TEXT}"],
        "flags": [ZIP_ENTRY, f"'{name}/conftest.py': a conftest.py"],
    }


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    from grader import collect

    folder = tmp_path_factory.mktemp("out")
    entries = {collect.student_id(n): entry(n, k) for k, n in enumerate(HOSTILE_NAMES)}
    # The last run: every score differs, so regrade.md and .csv list every student.
    old = {s: {"key": "old:x", "name": e["name"], "records": {}} for s, e in entries.items()}
    before = regrade.Before("old", specs(), old)
    prov = {"isolation": "namespace", "chapters": ["ch00"], "limits": {}, "course": {}}
    outputs.write(folder, [CHAPTER], specs(), entries, prov=prov, before=before, key="new")
    return folder


def markdown_files(out: Path) -> list[Path]:
    files = [out / "summary.md", *out.glob("*/feedback.md")]
    files += [out / "_instructor" / n for n in ("hidden_failures.md", "regrade.md")]
    assert len(files) == len(HOSTILE_NAMES) + 3
    return files


def csv_files(out: Path) -> list[Path]:
    files = [out / "grades.csv", out / "grades_status.csv"]
    names = ("students.csv", "regrade.csv", "canvas.csv", "canvas_tasks.csv")
    files += [out / "_instructor" / n for n in (*names, "moodle.csv", "moodle_tasks.csv")]
    return files


def render(text: str):
    md = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return md.parse(text), md.render(text)


def test_markdown_shows_hostile_text_and_makes_nothing_of_it(out):
    for path in markdown_files(out):
        text = path.read_text()
        tokens, rendered = render(text)
        kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or []}
        assert not kinds & {"html_inline", "html_block", "link_open"}, (path, kinds)
        images = re.findall(r'<img src="([^"]*)"', rendered)
        assert set(images) <= {"score_distribution.png", "task_losses.png"}, (path, images)
        assert "\x1b" not in text and "<a " not in rendered, path
        assert TRACKER not in images and EVIL not in re.findall(r'href="([^"]*)"', rendered)


def test_every_name_is_shown_as_it_was_in_markdown(out):
    shown = {escape.one_line(n) for n in HOSTILE_NAMES}
    headings = set()
    for path in out.glob("*/feedback.md"):
        tokens, _ = render(path.read_text())
        inline = next(t for i, t in enumerate(tokens) if i and tokens[i - 1].type == "heading_open")
        headings.add(_text(inline))
    assert headings == {f"Feedback for {n}" for n in shown}
    # regrade.md: a table row per student, the name whole in its own cell
    tokens, _ = render((out / "_instructor" / "regrade.md").read_text())
    first_cells = _first_cells(tokens)
    assert shown <= set(first_cells), shown - set(first_cells)


def _text(inline) -> str:
    return "".join(
        c.content if c.type in ("text", "code_inline") else " " if c.type == "softbreak" else ""
        for c in inline.children or []
    )


def _first_cells(tokens) -> list[str]:
    """The text of the first cell of every body row of every table."""
    cells, in_body, first = [], False, False
    for t in tokens:
        if t.type == "tbody_open":
            in_body = True
        elif t.type == "tbody_close":
            in_body = False
        elif in_body and t.type == "tr_open":
            first = True
        elif in_body and first and t.type == "inline":
            cells.append(_text(t))
            first = False
    return cells


def test_every_markdown_table_keeps_its_columns(out):
    for path in markdown_files(out):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if re.fullmatch(r"\|( --- \|)+", line):
                width = line.count("|")
                k = i + 1
                while k < len(lines) and lines[k].startswith("|"):
                    cells = re.split(r"(?<!\\)\|", lines[k])
                    assert len(cells) == width + 1, (path, lines[k])
                    k += 1


def test_csv_cells_never_start_like_a_formula_and_names_round_trip(out):
    formula = ("=", "+", "-", "@", "\t", "\r")
    for path in csv_files(out):
        rows = list(csv.reader(io.StringIO(path.read_text(), newline="")))
        for row in rows:
            for cell in row:
                assert not cell.startswith(formula), (path, cell)
                assert "\x1b" not in cell, (path, cell)
    with open(out / "grades.csv", newline="") as f:
        names = [row["student"] for row in csv.DictReader(f)]
    unquoted = [n[1:] if n.startswith("'") else n for n in names]
    assert sorted(unquoted) == sorted(escape.plain(n) for n in HOSTILE_NAMES)


def test_results_json_is_text_for_gradescope_without_escapes(out):
    for path in out.glob("*/results.json"):
        data = json.loads(path.read_text())
        assert data["output_format"] == data["test_output_format"] == "text"
        assert data["test_name_format"] == "text"
        strings = re.findall(r'"(?:[^"\\]|\\.)*"', path.read_text())
        assert not any("\\u001b" in s for s in strings), path
        failed = [
            t for t in data["tests"] if t["status"] == "failed" and t["visibility"] == "visible"
        ]
        assert failed and all(TRACKER in t["output"] for t in failed)  # shown, as text


def test_the_escaping_functions_on_their_own():
    assert escape.md_text("[x](y)") == "\\[x\\](y)"
    assert escape.md_text("<b>") == "&lt;b&gt;" and escape.md_text("plot_losses") == "plot_losses"
    assert escape.md_text("# h") == "\\# h" and escape.md_text("1. x") == "1\\. x"
    assert escape.md_cell("a|b") == "a\\|b" and escape.md_cell("") == " "
    block = escape.md_block("a\n```\nb")
    assert block.startswith("````") and block.endswith("````")
    assert escape.csv_cell("=1+1") == "'=1+1" and escape.csv_cell("\r=x").startswith("'")
    assert escape.csv_cell(-3) == -3 and escape.csv_cell("a-b") == "a-b"
    assert escape.html('"<a>"') == html.escape('"<a>"', quote=True)
    assert escape.terminal("a\x1b[2Jb\nc\u202ed") == "ab cd"
    assert escape.json_text("x\x1b[31my\x07") == "xy"
