"""Lab notebooks: sources in git as percent-format scripts (``course/labs/chNN.py``,
readable in review and by jupytext), real ``.ipynb`` files in the student release, and
``python -m grader lab chNN [--run]``, which builds one and opens it in JupyterLab or runs
it headless.

A source is Python with cell markers: ``# %%`` starts a code cell, ``# %% [markdown]`` a
markdown cell whose lines are comments (``# `` is stripped).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import lab
from harness.target import REPO

LABS = REPO / "course" / "labs"
RELEASED = REPO / "labs"  # the student release's labs/chNN.ipynb
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


def _join(lines: list[str]) -> str:
    # one string, not nbformat's on-disk list of lines: nbformat.from_dict and nbclient
    # take the notebook as written, and only ``nbformat.reads`` joins such lists
    return "\n".join(lines)


def write_notebooks(out: Path) -> list[Path]:
    """``out/labs/chNN.ipynb`` for every lab source; the paths written."""
    written = []
    for src in sources():
        dest = Path(out) / "labs" / f"{src.stem}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(to_notebook(src.read_text()), indent=1) + "\n")
        written.append(dest)
    return written


def notebook_of(chapter: str) -> dict:
    """The chapter's lab as a notebook: from its source, or (in a release) as shipped."""
    source = LABS / f"{chapter}.py"
    if source.is_file():
        return to_notebook(source.read_text(encoding="utf-8"))
    shipped = RELEASED / f"{chapter}.ipynb"
    if shipped.is_file():
        return json.loads(shipped.read_text(encoding="utf-8"))
    known = sorted({p.stem for p in [*LABS.glob("ch*.py"), *RELEASED.glob("ch*.ipynb")]})
    raise KeyError(f"no lab for {chapter!r} (labs: {', '.join(known) or 'none'})")


def execute(nb: dict, impl: str | Path, figures: Path, settings: dict | None = None) -> dict:
    """Run notebook ``nb`` in a fresh kernel on implementation ``impl`` (figures into
    ``figures``, working folder the course's root); the notebook with its outputs."""
    return execute_in_turn([(nb, impl)], figures, settings)[0]


def execute_in_turn(
    runs: list[tuple[dict, str | Path]],
    figures: Path,
    settings: dict | None = None,
    keep_going: bool = False,
) -> list[dict]:
    """Run each ``(notebook, impl)`` in turn in one fresh kernel, as ``execute`` runs one;
    before each later run the kernel's names are cleared, its figures closed and
    ``COURSE_IMPL`` set to that run's ``impl``. For the project's tests, which run every lab
    on the solutions and on the stubs: a kernel (and its ``import torch``) per run was most
    of their time. ``keep_going``: a cell's error is kept in its outputs (``printed``
    raises it) and the next cells and runs still run."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    notebooks = [nbformat.from_dict(nb) for nb, _ in runs]
    env = {
        "COURSE_IMPL": str(runs[0][1]),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        lab.FIGURES_ENV: str(figures),
        **(settings or {}),
    }
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)  # the kernel inherits this process's environment
    sockets = tempfile.mkdtemp(prefix="lab-kernel-")
    # Unix sockets where there are some: a TCP port picked as free can be taken by another
    # process before the kernel binds it ("Address already in use")
    where = {"transport": "ipc", "ip": os.path.join(sockets, "k")} if os.name == "posix" else {}
    kernel = KernelManager(kernel_name="python3", **where)
    try:
        client = NotebookClient(
            notebooks[0],
            timeout=600,
            km=kernel,
            allow_errors=keep_going,
            resources={"metadata": {"path": str(REPO)}},
        )
        with client.setup_kernel():
            for k, (notebook, (_, impl)) in enumerate(zip(notebooks, runs, strict=True)):
                if k:
                    reset = nbformat.v4.new_code_cell(
                        "%reset -f\nimport os\nimport matplotlib.pyplot\n"
                        f"matplotlib.pyplot.close('all')\nos.environ['COURSE_IMPL'] = {str(impl)!r}"
                    )
                    # nbclient stores an executed cell into client.nb at its index: the
                    # reset gets a notebook of its own, or it would take a lab's first cell
                    client.nb = nbformat.v4.new_notebook(cells=[reset])
                    client.execute_cell(reset, 0)
                client.nb = notebook
                for index, cell in enumerate(notebook.cells):
                    client.execute_cell(cell, index)
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return notebooks


def printed(nb) -> list[str]:
    """Every line the notebook's cells printed; an error output raises RuntimeError."""
    lines = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                raise RuntimeError(f"{output.get('ename')}: {output.get('evalue')}")
            if output.get("output_type") == "stream":
                lines += output["text"].splitlines()
    return lines


def main(chapter: str, run: bool = False, impl: str = "exercises") -> int:
    """``python -m grader lab chNN``: write ``labs-out/chNN.ipynb`` and open it in
    JupyterLab; with ``run``, execute it here and print what it shows instead."""
    try:
        nb = notebook_of(chapter)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    out = lab.output_folder()
    path = out / f"{chapter}.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    if run:
        return _run(nb, impl, out, chapter)
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        print(
            f"wrote {path}; JupyterLab is not installed, so it was not opened: install the labs "
            "extra (uv sync --extra grader --extra labs, or pip install -e '.[grader,labs]'), "
            f"or run the lab here without it: python -m grader lab {chapter} --run"
        )
        return 0
    print(f"opening {path} in JupyterLab (Ctrl-C here ends it)")
    return subprocess.call([sys.executable, "-m", "jupyterlab", str(path)], cwd=REPO)


def _run(nb: dict, impl: str, out: Path, chapter: str) -> int:
    try:
        import ipykernel  # noqa: F401
        import nbclient  # noqa: F401
    except ImportError as exc:
        print(
            f"error: running a lab needs nbclient and ipykernel ({exc}): install the labs extra "
            "(uv sync --extra grader --extra labs, or pip install -e '.[grader,labs]')",
            file=sys.stderr,
        )
        return 2
    from harness.target import resolve_impl

    done = execute(nb, resolve_impl(impl), out)
    for cell in done.cells:
        if cell.cell_type == "markdown":
            print("\n" + cell.source + "\n")
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                print(output["text"], end="")
            elif output.get("output_type") == "error":
                print(f"{output.get('ename')}: {output.get('evalue')}")
                return 1
    ran = out / f"{chapter}.run.ipynb"
    ran.write_text(json.dumps(done, indent=1) + "\n", encoding="utf-8")
    print(f"\n(the lab with its outputs: {ran}; its figures: {out})")
    return 0
