"""Shared by the figure scripts: import a chapter's reference solution by path.

from solution import load_solution
tl = load_solution("ch00", "training_loop")
"""

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_solution(chapter: str, module: str):
    """``solutions/<chapter>/<module>.py`` as a module registered under ``<chapter>_solution``
    (dataclasses, pickling and DataLoader workers look modules up by name)."""
    name = f"{chapter}_solution"
    spec = importlib.util.spec_from_file_location(
        name, REPO / "solutions" / chapter / f"{module}.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
