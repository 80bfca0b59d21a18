"""One escaping function per output format, for every student-controlled string.

Student names (folder and zip names), exception text, zip entry names, prints and test
output reach documents an instructor opens: Markdown (rendered by GitHub, an editor or
Gradescope), HTML, CSV (opened in a spreadsheet, imported into an LMS), JSON read by
Gradescope, a terminal. Each writer passes such text through the function of its
format, never its own replacements:

- ``md_text``: inline Markdown text, one line (headings, list items, sentences);
- ``md_cell``: a cell of a Markdown table;
- ``md_block``: multi-line text shown verbatim (a fenced code block);
- ``html``: HTML text or attribute values;
- ``csv_cell``: a CSV cell (formula injection neutralised, OWASP's rule);
- ``json_text``: a JSON string a person reads (Gradescope shows it as plain text);
- ``terminal``: a line printed to the instructor's terminal.

Every one of them first drops what no reader should receive: ANSI escape sequences,
other control characters, and the Unicode controls that reorder how text is displayed.
"""

from __future__ import annotations

import html as _html
import re

# CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \), and two-byte ESC sequences.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
# C0 and C1 controls except tab and newline; DEL; bidirectional overrides and isolates
# (text that displays in another order than it reads); zero-width joiners and marks.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
# What makes markup inline in CommonMark and GitHub's Markdown: links and images need
# brackets, emphasis needs * or a word-boundary _, code spans backticks, strikethrough ~,
# table cells |. (An underscore inside a word, as in plot_losses, makes nothing.)
_MD_SPECIAL = re.compile(r"([\\`*~\[\]|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
# Cells a spreadsheet reads as a formula (OWASP's CSV injection rule).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def plain(text: object) -> str:
    """``text`` as a string without escape sequences or control characters (tabs and
    newlines kept, carriage returns read as newlines)."""
    text = str(text).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _ANSI.sub("", text))


def one_line(text: object) -> str:
    """``plain`` text on one line: newlines and tabs become spaces."""
    return " ".join(plain(text).replace("\t", " ").split("\n")).strip()


def md_text(text: object) -> str:
    """Inline Markdown that shows ``text`` as it is: no link, image, emphasis, heading or
    HTML can be made from it, on one line."""
    text = one_line(text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    if text[:1] in ("-", "+", "=", "#"):
        return "\\" + text
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", text)


def md_cell(text: object) -> str:
    """A Markdown table cell showing ``text``: ``md_text`` (its pipes escaped, so the row
    keeps its columns)."""
    return md_text(text) or " "


def md_block(text: object, info: str = "text") -> str:
    """Multi-line ``text`` as a fenced code block, shown verbatim: the fence is longer
    than any run of backticks inside, so the text cannot close it."""
    body = plain(text).rstrip("\n")
    runs = [len(m) for m in re.findall(r"`+", body)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def html(text: object) -> str:
    """HTML text or a quoted attribute value showing ``text``."""
    return _html.escape(plain(text), quote=True)


def csv_cell(value: object) -> object:
    """A CSV cell: numbers as they are; text without control characters, and with a
    leading ``'`` when it starts like a formula (``=``, ``+``, ``-``, ``@``, tab, carriage
    return), so a spreadsheet shows it instead of computing it. Quoting is the csv
    module's."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raw = str(value)
    text = plain(raw)
    if raw.startswith(_FORMULA_START) or text.startswith(_FORMULA_START):
        text = "'" + text
    return text


def json_text(text: object) -> str:
    """Text for a JSON field a person reads: ``plain``. (Gradescope is told to show it as
    text, ``report.results_json``, so HTML in it is shown, never rendered.)"""
    return plain(text)


def terminal(text: object) -> str:
    """One line for the instructor's terminal, which must not obey escape sequences."""
    return one_line(text)
