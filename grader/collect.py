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
holds (``conftest.py``, ``pytest.ini``, plugins, data) never takes part; what would have
changed how tests run, had it been loaded, is named in the submission's ``flags`` for the
instructor (with refused zip entries and modules that hold grader-shaped results).

Every entry of the folder is a student, whatever its name (``Zoë Åström``, ``obrien,jr``,
``=SUM(1+1)``): ``student_id`` derives a safe internal id from the name, and the name
itself is kept for every output. An entry that cannot be graded as a student (a symbolic
link, a file that is not a zip, a second submission of one student, a folder that cannot
be read) is ``left_out`` with its reason, never dropped in silence.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import stat
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness import index
from harness.target import REPO

MAX_FILE_BYTES = 1 << 20
# A name used as the student's id as it is; any other name gets a derived id.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}")
# The derived ids' mark: no plain id holds it, so a derived id never equals a plain one.
DERIVED = "~"
SLUG_MAX = 40
# Entries of a folder of submissions that are the system's, never a student's.
SYSTEM_ENTRIES = ("__MACOSX", "Thumbs.db", "desktop.ini")


def student_id(name: str) -> str:
    """The internal id of the student whose folder or zip is named ``name``: the name
    itself when it is a plain id (``STUDENT_ID``), else an ASCII slug of it, ``~`` and a
    hash of the whole name. Stable, safe as a file name, distinct for distinct names."""
    if STUDENT_ID.fullmatch(name):
        return name
    ascii_ = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", ascii_).strip("._-")[:SLUG_MAX].rstrip("._-")
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{slug or 'student'}{DERIVED}{digest}"


@dataclass
class Submission:
    student: str  # the internal id (``student_id``): journal key, output folder
    source: Path
    files: dict[str, bytes]  # "chNN/<module>.py" -> content
    notes: list[str] = field(default_factory=list)  # what the student is told
    name: str = ""  # the name as submitted (the folder or zip name), shown in every output
    # For the instructor: files that would have changed how tests run, refused zip
    # entries, grader-shaped results in a module (none of them took part in grading).
    flags: list[str] = field(default_factory=list)

    @property
    def shown(self) -> str:
        return self.name or self.student

    def digest(self) -> str:
        h = hashlib.sha256()
        for rel in sorted(self.files):
            h.update(rel.encode() + b"\0" + hashlib.sha256(self.files[rel]).digest())
        for note in self.notes:
            h.update(b"note\0" + note.encode("utf-8", "surrogateescape"))
        return h.hexdigest()


@dataclass
class Found:
    """What a folder of submissions holds: the submissions (sorted by id), warnings about
    their shape, and the entries that are not graded as students, each with why."""

    submissions: list[Submission]
    warnings: list[str]
    left_out: list[tuple[str, str]]  # (entry name, why)


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
            # A module not there is "not submitted", said per chapter, not as a note.
            if os.path.islink(chapter_dir):
                notes.append(f"{rel}: its folder is a symbolic link; ignored")
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
    files, notes, _ = _read_zip(path, chapters)
    return files, notes


def _read_zip(
    path: Path, chapters: list[index.Chapter]
) -> tuple[dict[str, bytes], list[str], list[str]]:
    """The expected modules of a zip, notes for the student (refused entries, files not
    read) and the control files it holds (``_control_flag``)."""
    files, notes, flags = {}, [], []
    wanted = set(expected_paths(chapters))
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        return {}, [f"{path.name}: not a readable zip ({exc})"], []
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
            flag = _control_flag(parts, lambda info=info: _zip_bytes(archive, info))
            if flag:
                flags.append(flag)
            # chNN/<module>.py, possibly under one or two enclosing folders
            for depth in range(0, min(3, len(parts) - 1)):
                rel = "/".join(parts[depth:])
                if rel in wanted and rel not in members:
                    members[rel] = info
        for rel in sorted(wanted):
            info = members.get(rel)
            if info is None:
                continue  # not submitted: said per chapter
            if info.file_size > MAX_FILE_BYTES:
                notes.append(f"{rel}: larger than {MAX_FILE_BYTES >> 10} KiB; not read")
                continue
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
    return files, notes, flags


def _zip_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes | None:
    if info.file_size > MAX_FILE_BYTES:
        return None
    try:
        with archive.open(info) as f:
            return f.read(MAX_FILE_BYTES + 1)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError):
        return None


# ---- what the instructor hears of ---------------------------------------------------

# Files that change how pytest or Python runs where they are loaded, and results files:
# the grader loads none of them; a submission holding one is named in the summary.
CONTROL_FILES = {
    "conftest.py": "a conftest.py (pytest would load it; the grader never does)",
    "pytest.ini": "a pytest configuration (never read by the grader)",
    "tox.ini": "a pytest configuration (never read by the grader)",
    "setup.cfg": "a pytest configuration (never read by the grader)",
    "pyproject.toml": "a pytest configuration (never read by the grader)",
    "sitecustomize.py": "a Python start-up hook (never loaded by the grader)",
    "usercustomize.py": "a Python start-up hook (never loaded by the grader)",
    "results.json": "a results file (grades come from the grader's own run only)",
}
# Configuration files that only matter when they configure pytest.
_IF_PYTEST = ("tox.ini", "setup.cfg", "pyproject.toml")
SCAN_DEPTH = 4
SCAN_ENTRIES = 5000
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".ipynb_checkpoints"}
# Keys of the grader's own results (Gradescope's and the test process's events).
RESULT_KEYS = {"score", "max_score", "outcome", "nodeid", "ev"}


def _course_own() -> set[str]:
    """sha256 of the course's own copies of control files (a submission of the whole
    student bundle holds them unchanged: not worth a word)."""
    found = set()
    for path in [REPO / "conftest.py", REPO / "pyproject.toml", REPO / "exercises/conftest.py"]:
        try:
            found.add(hashlib.sha256(path.read_bytes()).hexdigest())
        except OSError:
            pass
    return found


_OWN: set[str] | None = None


def _control_flag(parts: tuple[str, ...], read) -> str | None:
    """What the instructor should hear of the file at ``parts`` (None: nothing)."""
    global _OWN
    name = parts[-1] if parts else ""
    what = CONTROL_FILES.get(name)
    if what is None and name.endswith(".pth"):
        what = "a Python start-up hook (never loaded by the grader)"
    if what is None:
        return None
    data = read()
    if data is not None:
        if _OWN is None:
            _OWN = _course_own()
        if hashlib.sha256(data).hexdigest() in _OWN:
            return None
        if name in _IF_PYTEST and b"pytest" not in data:
            return None
    return f"{'/'.join(parts)!r}: {what}"


def folder_flags(folder: Path) -> list[str]:
    """Control files anywhere in a submission folder (a bounded walk, no symlinks)."""
    flags, seen = [], 0
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = Path(dirpath).relative_to(folder).parts
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        if len(rel) >= SCAN_DEPTH:
            dirnames[:] = []
        for name in sorted(filenames):
            seen += 1
            if seen > SCAN_ENTRIES:
                return flags
            path = Path(dirpath) / name

            def read(path=path) -> bytes | None:
                try:
                    return read_regular(path)
                except (OSError, ValueError):
                    return None

            flag = _control_flag((*rel, name), read)
            if flag:
                flags.append(flag)
    return flags


def forged_results(files: dict[str, bytes]) -> list[str]:
    """Modules that hold results shaped like the grader's own (a dict with a ``score``
    or ``outcome`` key, a ``results.json`` path): read from the source, never run."""
    found = []
    for rel, data in sorted(files.items()):
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        keys = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                keys |= {k.value for k in node.keys if isinstance(k, ast.Constant)}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.endswith("results.json"):
                    keys.add("results.json")
        hits = sorted(str(k) for k in keys & (RESULT_KEYS | {"results.json"}))
        if hits:
            found.append(
                f"{rel!r}: holds results shaped like the grader's ({', '.join(hits)}): forged "
                "output? (what a module prints or writes takes no part in grading)"
            )
    return found


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
    """Every submission under ``path`` in the given layout (sorted by student id), and
    warnings: the shape of folders, and each entry left out with why (``find`` keeps
    those apart)."""
    found = find(path, chapters, layout)
    return found.submissions, found.warnings + [
        f"not graded: {name!r}: {why}" for name, why in found.left_out
    ]


def find(path: Path, chapters: list[index.Chapter], layout: str = "folders") -> Found:
    """Every submission under ``path`` in the given layout, sorted by student id; every
    other entry (but the system's: ``.``-names, ``__MACOSX``) is left out with why."""
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
    left_out: list[tuple[str, str]] = []
    for name in sorted(os.listdir(path)):
        if name.startswith(".") or name in SYSTEM_ENTRIES:
            continue
        entry = path / name
        is_zip = name.lower().endswith(".zip") and len(name) > 4
        student_name = name[:-4] if is_zip else name
        why = None
        if entry.is_symlink():
            why = "a symbolic link (submit the folder or zip itself)"
        elif not (_is_real_dir(entry) or (is_zip and _is_regular(entry))):
            why = "neither a folder nor a .zip"
        if why:
            left_out.append((name, why))
            continue
        student = student_id(student_name)
        if student in subs:
            other = subs[student]
            why = (
                f"a second submission of {student_name!r} ({other.source.name} is graded)"
                if other.name == student_name
                else f"its id {student!r} is also {other.name!r}'s"
            )
            left_out.append((name, why))
            continue
        try:
            if _is_real_dir(entry):
                files, notes = read_folder(entry, chapters)
                flags = folder_flags(entry)
                warnings += _layout_warnings(name, entry, layout, chapters)
            else:
                files, notes, flags = _read_zip(entry, chapters)
        except OSError as exc:
            left_out.append((name, f"could not be read ({exc.strerror or exc})"))
            continue
        # What was refused (the notes) and what would have changed the run, for the summary.
        flags = notes + flags + forged_results(files)
        subs[student] = Submission(student, entry, files, notes, student_name, flags)
    return Found([subs[s] for s in sorted(subs)], warnings, left_out)
