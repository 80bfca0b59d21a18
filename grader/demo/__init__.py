"""The bundled demo submissions: a handful of made-up students, built into a folder at
run time so the README's main-job command has something to grade on a fresh machine.

- ``ada``: complete — every chapter's reference solution (assembled from ``solutions/``,
  not copied into the repository).
- ``ben``: partial — a half-done ``ch00`` (a real file here), the stubs elsewhere.
- ``cy``: broken — a ``ch00`` module with a syntax error, nothing else.
- ``mallory``: hostile — a ``conftest.py`` that forces passes, a ``pytest.ini``, forged
  results on stdout and on disk, ``os._exit(0)`` inside a test, attempts to delete files
  around it; the rest of ``ch00`` is the solution, so only what it broke scores zero.
- ``zed.zip``: a zip with a ``../`` entry beside the real module (refused, rest graded).
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from harness import index
from harness.target import NAMED_TARGETS

HERE = Path(__file__).parent


def _copy_chapters(source: Path, dest: Path, skip: tuple[str, ...] = ()) -> None:
    for chapter in index.chapters().values():
        module = source / chapter.id / f"{chapter.module}.py"
        if chapter.id not in skip and module.is_file():
            (dest / chapter.id).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(module, dest / chapter.id / module.name)


def build(dest: Path) -> Path:
    """Write the demo submissions into ``dest`` (replacing what was there); return it."""
    dest = Path(dest)
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    _copy_chapters(NAMED_TARGETS["solutions"], dest / "ada")
    shutil.copytree(HERE / "ben", dest / "ben")
    _copy_chapters(NAMED_TARGETS["exercises"], dest / "ben", skip=("ch00",))
    (dest / "cy" / "ch00").mkdir(parents=True)
    shutil.copyfile(HERE / "cy" / "ch00" / "training_loop.txt", dest / "cy/ch00/training_loop.py")
    shutil.copytree(HERE / "mallory", dest / "mallory")
    solution = (NAMED_TARGETS["solutions"] / "ch00" / "training_loop.py").read_text()
    hostile = (HERE / "mallory" / "ch00" / "training_loop.py").read_text()
    (dest / "mallory/ch00/training_loop.py").write_text(f"{solution}\n\n{hostile}")
    with zipfile.ZipFile(dest / "zed.zip", "w") as z:
        z.writestr("zed/ch00/training_loop.py", solution)
        z.writestr("../escaped.py", "print('written outside the submission')\n")
    return dest
