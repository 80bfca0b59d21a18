"""Find the submissions and take from each exactly the expected chapter modules.

A submission is a folder or a ``.zip`` shaped like ``exercises/`` (``chNN/<module>.py``,
optionally under one enclosing folder), named by student id. Where the submissions are
is the instructor's choice, never inferred from them (``LAYOUTS``): ``"folders"``, the
given folder holds one entry per student; ``"nbgrader"``, it is an nbgrader course
directory and its ``submitted/<student>/<chNN>/<module>.py`` has the same shape below
``submitted/``. A student's folder can be named anything a student id allows, so no
folder name switches the layout (a student named ``submitted`` is a student); a folder
that looks like another layout is graded as its student's own and named in a warning.

Only regular files at the expected paths are read, never through a symbolic link, at
most ``MAX_FILE_BYTES`` each; zips are read in memory (nothing is extracted), and entries
with absolute or ``..`` paths or symlink modes are refused. Everything else a submission
holds (``conftest.py``, ``pytest.ini``, plugins, data) never takes part.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness import index

MAX_FILE_BYTES = 1 << 20
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}")


@dataclass
class Submission:
    student: str
    source: Path
    files: dict[str, bytes]  # "chNN/<module>.py" -> content
    notes: list[str] = field(default_factory=list)

    def digest(self) -> str:
        h = hashlib.sha256()
        for rel in sorted(self.files):
            h.update(rel.encode() + b"\0" + hashlib.sha256(self.files[rel]).digest())
        for note in self.notes:
            h.update(b"note\0" + note.encode())
        return h.hexdigest()


def expected_paths(chapters: list[index.Chapter]) -> list[str]:
    return [f"{c.id}/{c.module}.py" for c in chapters]


# ---- folders --------------------------------------------------------------------


def read_regular(path: Path) -> bytes:
    """Read a regular file without following a symlink at its last component."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES >> 10} KiB")
    return data


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _folder_root(folder: Path) -> Path:
    """The folder that holds chNN/ (the submission itself or its single subfolder)."""
    for _ in range(2):
        if any(
            _is_real_dir(folder / name) and name.startswith("ch") for name in os.listdir(folder)
        ):
            return folder
        subdirs = [
            n for n in os.listdir(folder) if _is_real_dir(folder / n) and not n.startswith(".")
        ]
        if len(subdirs) != 1:
            return folder
        folder = folder / subdirs[0]
    return folder


def read_folder(folder: Path, chapters: list[index.Chapter]) -> tuple[dict[str, bytes], list[str]]:
    files, notes = {}, []
    root = _folder_root(folder)
    for rel in expected_paths(chapters):
        chapter_dir, path = root / rel.split("/")[0], root / rel
        try:
            st = os.lstat(path)
        except OSError:
            if os.path.islink(chapter_dir):
                notes.append(f"{rel}: its folder is a symbolic link; ignored")
            else:
                notes.append(f"{rel}: missing")
            continue
        if os.path.islink(chapter_dir):
            notes.append(f"{rel}: its folder is a symbolic link; ignored")
        elif stat.S_ISLNK(st.st_mode):
            notes.append(f"{rel}: a symbolic link; ignored (submit the file itself)")
        else:
            try:
                files[rel] = read_regular(path)
            except (OSError, ValueError) as exc:
                notes.append(f"{rel}: not read ({exc})")
    return files, notes


# ---- zips ---------------------------------------------------------------------------


def _safe_member(info: zipfile.ZipInfo) -> str | None:
    """Why a zip entry is refused, or None if it is a plain file at a safe path."""
    name = info.filename
    path = PurePosixPath(name.replace("\\", "/"))
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or path.is_absolute():
        return "absolute path"
    if ".." in path.parts:
        return "path leaves the submission (..)"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "symbolic link"
    return None


def read_zip(path: Path, chapters: list[index.Chapter]) -> tuple[dict[str, bytes], list[str]]:
    files, notes = {}, []
    wanted = set(expected_paths(chapters))
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        return {}, [f"{path.name}: not a readable zip ({exc})"]
    with archive:
        members = {}
        for info in archive.infolist():
            if info.is_dir():
                continue
            why = _safe_member(info)
            if why:
                notes.append(f"zip entry {info.filename!r} refused: {why}")
                continue
            parts = PurePosixPath(info.filename.replace("\\", "/")).parts
            # chNN/<module>.py, possibly under one or two enclosing folders
            for depth in range(0, min(3, len(parts) - 1)):
                rel = "/".join(parts[depth:])
                if rel in wanted and rel not in members:
                    members[rel] = info
        for rel in sorted(wanted):
            info = members.get(rel)
            if info is None:
                notes.append(f"{rel}: missing")
            elif info.file_size > MAX_FILE_BYTES:
                notes.append(f"{rel}: larger than {MAX_FILE_BYTES >> 10} KiB; not read")
            else:
                try:
                    with archive.open(info) as f:
                        data = f.read(MAX_FILE_BYTES + 1)
                except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
                    notes.append(f"{rel}: not readable in the zip ({exc})")
                    continue
                if len(data) > MAX_FILE_BYTES:
                    notes.append(f"{rel}: larger than {MAX_FILE_BYTES >> 10} KiB; not read")
                else:
                    files[rel] = data
    return files, notes


# ---- the folder of submissions -------------------------------------------------------


LAYOUTS = ("folders", "nbgrader")
# Files an nbgrader course directory keeps beside submitted/: regular files at the top of
# the folder the instructor named, which no student's folder or zip can be.
NBGRADER_MARKERS = ("nbgrader_config.py", "gradebook.db")
# Subfolders of a student's folder looked at for the shape of other submissions.
_LOOK_AT = 100


def submissions_dir(path: Path, layout: str = "folders") -> Path:
    """The folder holding one entry per student: ``path`` itself, or for the nbgrader
    layout the ``submitted/`` folder of the course directory ``path``."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r} (one of {', '.join(LAYOUTS)})")
    if layout == "folders":
        return path
    submitted = path / "submitted"
    if not _is_real_dir(submitted):
        raise FileNotFoundError(
            f"no submitted/ folder in {path}: the nbgrader layout expects an nbgrader "
            "course directory (submitted/<student>/<chNN>/)"
        )
    return submitted


def _holds_submissions(folder: Path, chapters: list[index.Chapter]) -> list[str]:
    """Subfolders of a student's folder shaped like submissions of their own (holding
    a chapter folder), as a student's folder never needs more than one of."""
    ids = {c.id for c in chapters}
    try:
        names = sorted(n for n in os.listdir(folder) if not n.startswith("."))[:_LOOK_AT]
    except OSError:
        return []
    found = []
    for name in names:
        sub = folder / name
        if name in ids or not _is_real_dir(sub):
            continue
        if any(_is_real_dir(sub / c) for c in ids):
            found.append(name)
    return found


def _layout_warnings(
    name: str, entry: Path, layout: str, chapters: list[index.Chapter]
) -> list[str]:
    """What makes a student's folder look like a layout of its own (a folder named
    ``submitted``, several submission-shaped subfolders): it is graded as that one
    student all the same, and the instructor hears of it."""
    inner = _holds_submissions(entry, chapters)
    if layout == "folders" and name == "submitted":
        why = "in the folders layout a folder named submitted is a student's"
        if inner:
            why += f", though it holds folders shaped like submissions ({_some(inner)})"
        return [
            f"{name!r} is graded as one student: {why}; for an nbgrader course directory "
            "use --layout nbgrader"
        ]
    if len(inner) > 1:
        return [
            f"{name!r} is graded as one student, but holds folders shaped like other "
            f"submissions ({_some(inner)}); only its own chapter folders count"
        ]
    return []


def _some(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")


def discover(
    path: Path, chapters: list[index.Chapter], layout: str = "folders"
) -> tuple[list[Submission], list[str]]:
    """Every submission under ``path`` in the given layout (sorted by student), and
    warnings about skipped entries and folders that look like another layout."""
    path = Path(path)
    warnings = []
    markers = [m for m in NBGRADER_MARKERS if _is_regular(path / m)]
    if layout == "folders" and markers and _is_real_dir(path / "submitted"):
        warnings.append(
            f"{path} looks like an nbgrader course directory ({markers[0]} beside "
            "submitted/) but is graded as a folder of submissions: pass --layout nbgrader "
            "to grade submitted/<student>/"
        )
    path = submissions_dir(path, layout)
    if not path.is_dir():
        raise FileNotFoundError(f"no folder of submissions at {path}")
    subs: dict[str, Submission] = {}
    for name in sorted(os.listdir(path)):
        entry = path / name
        if name.startswith("."):
            continue
        student = name[:-4] if name.lower().endswith(".zip") else name
        if not STUDENT_ID.fullmatch(student):
            warnings.append(f"skipped {name!r}: not a usable student id")
            continue
        if entry.is_symlink():
            warnings.append(f"skipped {name!r}: a symbolic link")
            continue
        if _is_real_dir(entry):
            files, notes = read_folder(entry, chapters)
            warnings += _layout_warnings(name, entry, layout, chapters)
        elif name.lower().endswith(".zip") and entry.is_file():
            files, notes = read_zip(entry, chapters)
        else:
            continue
        if student in subs:
            warnings.append(f"skipped {name!r}: student {student!r} has another submission")
            continue
        subs[student] = Submission(student, entry, files, notes)
    return [subs[s] for s in sorted(subs)], warnings
