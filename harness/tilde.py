"""A place where ``~`` is only a name, for probes checking that a path is used exactly as
given: a fresh working folder that holds a folder called ``~``, and HOME set to another
fresh folder (a call that expands ``~`` writes there instead)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def tilde_folder():
    """Run the body in a fresh working folder holding ``~/``, with HOME a fresh folder of its
    own; yields ``files()``, the files then under each (``{"cwd": [...], "home": [...]}``,
    relative paths). The working folder and HOME are put back afterwards."""
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as home:
        (Path(work) / "~").mkdir()
        cwd, old_home = os.getcwd(), os.environ.get("HOME")

        def files() -> dict[str, list[str]]:
            return {
                where: sorted(
                    str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file()
                )
                for where, root in (("cwd", work), ("home", home))
            }

        os.chdir(work)
        os.environ["HOME"] = home
        try:
            yield files
        finally:
            os.chdir(cwd)
            if old_home is None:
                del os.environ["HOME"]
            else:
                os.environ["HOME"] = old_home
