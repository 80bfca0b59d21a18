"""Lab notebooks: sources in git as percent-format scripts (``course/labs/chNN.py``,
readable in review and by jupytext), real ``.ipynb`` files in the student release.

A source is Python with cell markers: ``# %%`` starts a code cell, ``# %% [markdown]`` a
markdown cell whose lines are comments (``# `` is stripped).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.target import REPO

LABS = REPO / "course" / "labs"
MARKER = re.compile(r"^# %%(?:\s*\[(\w+)\])?\s*$")


def sources() -> list[Path]:
    return sorted(LABS.glob("ch*.py"))


def to_notebook(source: str) -> dict:
    """The nbformat-4 notebook of a percent-format ``source``."""
    cells, kind, lines = [], None, []

    def flush():
        if kind is None:
            return
        while lines and not lines[-1].strip():
            lines.pop()
        if kind == "markdown":
            text = [re.sub(r"^# ?", "", ln) for ln in lines]
            cells.append(
                {
                    "cell_type": "markdown",
                    "id": f"c{len(cells)}",
                    "metadata": {},
                    "source": _join(text),
                }
            )
        elif lines:
            cells.append(
                {
                    "cell_type": "code",
                    "id": f"c{len(cells)}",
                    "metadata": {},
                    "execution_count": None,
                    "outputs": [],
                    "source": _join(lines),
                }
            )

    for line in source.splitlines():
        m = MARKER.match(line)
        if m:
            flush()
            kind, lines = ("markdown" if m.group(1) == "markdown" else "code"), []
        elif kind is not None:
            lines.append(line)
    flush()
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _join(lines: list[str]) -> list[str]:
    return [ln + "\n" for ln in lines[:-1]] + lines[-1:]


def write_notebooks(out: Path) -> list[Path]:
    """``out/labs/chNN.ipynb`` for every lab source; the paths written."""
    written = []
    for src in sources():
        dest = Path(out) / "labs" / f"{src.stem}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(to_notebook(src.read_text()), indent=1) + "\n")
        written.append(dest)
    return written
