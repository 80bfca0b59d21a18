"""The similarity report: copies run through a disguising script (every step of
``tests/grader_data/disguise.py``, on every chapter) are flagged, against the reference
solution or against the student they copied; independent correct solutions are not; a
pair that only shares the reference's code says so; each pair is shown with both
students' grades and every student-controlled string escaped; and grading needs no
third-party package for it."""

from __future__ import annotations

import ast
import csv
import functools
import re
import sys

import pytest

from grader import canonical, escape, outputs, report, score, similarity
from harness import index
from tests.grader_data import disguise
from tests.grader_data.helpers import SOLUTION, STUB

CH00 = index.chapter("ch00")
CHAPTERS = index.chapters()
INDEPENDENT = "written_independently.py"
STEPS = {**disguise.STEPS, "all steps": disguise.everything}


def contract(chapter: index.Chapter) -> frozenset[str]:
    """The names a working copy cannot change: the starter code's definitions."""
    return canonical.contract_names(similarity.starter(chapter))


@functools.cache
def canon_of(chapter_id: str) -> similarity.Canon:
    """One chapter's canonical texts, shared by the tests of that chapter."""
    return similarity.Canon(similarity.starter(index.chapter(chapter_id)))


def flagged(pairs: list[similarity.Pair]) -> dict[tuple[str, str], similarity.Pair]:
    return {(p.a, p.b): p for p in pairs}


@pytest.mark.parametrize("chapter_id", CHAPTERS)
def test_every_disguise_of_a_copy_is_flagged_and_independent_work_is_not(chapter_id):
    """Per chapter: the reference run through each step (and all of them, and with a
    ``print`` slipped after every statement) is flagged as a copy of the reference; where
    the chapter keeps a module written without sight of the reference, a copy of it run
    through every step is flagged as a copy of that student, not of the reference, and
    the module itself is not flagged."""
    chapter = index.chapter(chapter_id)
    canon = canon_of(chapter_id)
    ref = similarity.reference(chapter)
    names = contract(chapter)
    copies = {step: change(ref, names) for step, change in STEPS.items()}
    # a statement with an effect after every statement: not undone, but not hidden either
    copies["noisy"] = disguise.noisy(ref, names)
    assert all(code != ref for code in copies.values())
    pairs, rule = similarity.chapter_pairs(chapter, copies, canon)
    found = flagged(pairs)
    missed = [s for s in copies if (s, similarity.REFERENCE) not in found]
    assert not missed, (
        f"{chapter_id}: the reference run through {missed} is not flagged as a copy of "
        f"it (flag level {rule.level}): canonical() no longer undoes that step"
    )
    assert all(found[s, similarity.REFERENCE].score >= 0.99 for s in STEPS)
    # among the copies, what they share is the reference's: it is named as the source
    assert all(p.through_reference for p in pairs if not p.of_reference)

    mine_path = chapter.alternatives / INDEPENDENT
    if not mine_path.is_file():
        return
    mine = mine_path.read_text()
    class_ = {"author": mine, "copier": disguise.everything(mine, names)}
    pairs, rule = similarity.chapter_pairs(chapter, class_, canon)
    found = flagged(pairs)
    assert ("author", "copier") in found, f"{chapter_id}: a disguised copy of a student's module"
    assert not found["author", "copier"].through_reference, (
        "a copy of a student's own work was put down to the reference"
    )
    assert ("author", similarity.REFERENCE) not in found, (
        f"{chapter_id}: a module written without sight of the reference is flagged as "
        f"its copy: {found['author', similarity.REFERENCE]}"
    )


@pytest.mark.parametrize("chapter_id", CHAPTERS)
def test_each_correct_alternative_is_not_flagged_at_the_level_the_others_set(chapter_id):
    """Leave one out: the flag level a chapter would have without one of its correct
    alternatives still does not flag that alternative against the reference."""
    chapter = index.chapter(chapter_id)
    honest = similarity.honest_pairs(chapter, canon_of(chapter_id))
    assert len(honest) == len(list(chapter.alternatives.glob("*.py"))) >= 2
    for name, (share, tokens) in honest.items():
        others = [s for n, (s, t) in honest.items() if n != name and t >= similarity.MIN_TOKENS]
        rule = similarity.rule_for(chapter_id, others, [], True)
        assert share < rule.level or tokens < similarity.MIN_TOKENS, (name, share, tokens, rule)


def test_the_honest_pairs_are_kept_between_runs_until_a_file_they_come_from_changes(tmp_path):
    """They are the same for every class: a second run reads them back instead of
    canonicalising the reference and its alternatives again; a changed key recomputes."""
    chapter = index.chapter("ch00")
    fresh = similarity.honest_pairs(chapter, similarity.Canon(similarity.starter(chapter)))
    assert similarity.honest_pairs(chapter, canon_of("ch00"), tmp_path) == fresh

    class NoCanon(similarity.Canon):
        def print(self, code, starter):
            raise AssertionError("canonicalised again although nothing changed")

    again = NoCanon(similarity.starter(chapter))
    assert similarity.honest_pairs(chapter, again, tmp_path) == fresh
    (kept,) = (tmp_path / "similarity").glob("honest-ch00.json")
    kept.write_text(kept.read_text().replace('"key": "', '"key": "stale'))
    with pytest.raises(AssertionError, match="canonicalised again"):
        similarity.honest_pairs(chapter, again, tmp_path)
    kept.write_text("[1, 2]")  # damaged: measured again, never a crash
    with pytest.raises(AssertionError, match="canonicalised again"):
        similarity.honest_pairs(chapter, again, tmp_path)


def test_only_the_course_modules_canonical_texts_outlive_the_output_folder(tmp_path):
    """The starter code's and the reference's canonical texts are the same in every run:
    the per-user cache keeps them; a student's module stays in its run's folder only."""
    rel = f"{CH00.id}/{CH00.module}.py"
    reference = similarity.reference(CH00)
    student = reference.replace("def gradient_at", "def _unused():\n    pass\n\n\ndef gradient_at")
    similarity.find({"someone": {rel: student}}, [CH00], tmp_path / "run", tmp_path / "user")
    lasting = tmp_path / "user" / "similarity" / "course-ch00.json"
    canon = similarity.Canon(similarity.starter(CH00), None, lasting, (reference,))
    kept = set(canon.known)
    assert {similarity._key(reference), similarity._key(canon.starter)} <= kept, kept
    assert similarity._key(student) not in kept
    in_run = similarity.Canon(similarity.starter(CH00), tmp_path / "run/similarity/ch00.json")
    assert similarity._key(student) in in_run.known
    for damaged in ("[1, 2]", f'{{"version": "{canon.version}", "canonical": 5}}'):
        lasting.write_text(damaged)
        assert similarity.Canon(similarity.starter(CH00), None, lasting).known == {}


def test_the_flag_level_follows_the_chapter_and_the_class():
    floor = similarity.rule_for("chX", [], [], False)
    assert floor.level == similarity.FLOOR and "floor" in floor.basis
    alike = similarity.rule_for("chX", [0.7, 0.3], [], True)
    assert alike.level == round(0.7 + similarity.MARGIN, 3) and "alternatives" in alike.basis
    # a class whose honest pairs are all alike: only its outliers are flagged
    scores = [0.6, 0.65, 0.7] * 20
    crowd = similarity.rule_for("chX", [0.3], scores, True)
    assert crowd.median == 0.65 and crowd.level > similarity.FLOOR
    assert "class" in crowd.basis
    # too few students for a distribution of their own
    few = similarity.rule_for("chX", [0.3], scores[: similarity.CLASS_FROM], True)
    assert few.median is None and few.level == similarity.FLOOR
    # a class that copies wholesale cannot lift the level past what a copy scores
    copied = similarity.rule_for("chX", [0.3], [1.0] * 100, True)
    assert copied.level == similarity.CEILING and "ceiling" in copied.basis


# ---- a ch00 class --------------------------------------------------------------------


def with_functions_of(module: str, other: str) -> str:
    """``module`` with each function ``other`` also defines taken from ``other`` (and
    ``other``'s imports added)."""
    tree, theirs = ast.parse(module), ast.parse(other).body
    new = {n.name: n for n in theirs if isinstance(n, ast.FunctionDef)}
    imports = [n for n in theirs if isinstance(n, (ast.Import, ast.ImportFrom))]
    tree.body = imports + [new.get(getattr(n, "name", None), n) for n in tree.body]
    return ast.unparse(tree) + "\n"


NAMES = contract(CH00)
CLASS = {
    "alice": disguise.everything(SOLUTION, NAMES),  # the reference, disguised
    "bob": disguise.rename(SOLUTION, NAMES),  # the reference, renamed
    "dan": (CH00.alternatives / "autograd_grad_figure_api.py").read_text(),
    # the reference with a function of erin's own: hal copies her, not the reference
    "erin": with_functions_of(SOLUTION, (CH00.alternatives / "tail_level_reader.py").read_text()),
    "frank": STUB,  # nothing done: the starter code is all they share
    "gina": STUB,
}
ERIN_COPY = disguise.dead(disguise.flip(CLASS["erin"], NAMES), NAMES)


def test_a_class_with_copies_of_the_reference_says_where_the_code_came_from():
    classroom = CLASS | {"hal": ERIN_COPY}
    found = similarity.find({s: {"ch00/training_loop.py": c} for s, c in classroom.items()}, [CH00])
    pairs = flagged(found.pairs)
    of_reference = {p.a for p in found.pairs if p.of_reference}
    assert of_reference == {"alice", "bob", "erin", "hal"}, found.pairs
    # alice and bob share only the reference's code: the reference is their source
    assert pairs["alice", "bob"].through_reference
    # erin and hal are more alike than either is to the reference: one is the source
    erin_hal = pairs["erin", "hal"]
    assert erin_hal.score >= 0.99 and not erin_hal.through_reference, erin_hal
    assert "dan" not in {p.a for p in found.pairs} | {p.b for p in found.pairs}
    assert not any("frank" in (p.a, p.b) or "gina" in (p.a, p.b) for p in found.pairs)
    assert found.compared == {"ch00": len(classroom)}
    assert found.rules["ch00"].reference


def test_a_module_that_does_not_parse_is_named_not_silently_dropped(tmp_path):
    classroom = {"alice": CLASS["alice"], "ivan": SOLUTION + "\ndef broken(:\n"}
    found = similarity.find({s: {"ch00/training_loop.py": c} for s, c in classroom.items()}, [CH00])
    assert found.rules["ch00"].unreadable == ("ivan",)
    similarity.write(tmp_path, found, [], ["ch00"])
    assert (
        "not compared, as their module does not parse: ivan"
        in (tmp_path / "similarity.md").read_text()
    )


def test_a_run_without_modules_says_why_nothing_was_compared():
    found = similarity.find({"zed": {}}, [CH00])
    assert found.skipped and not found.pairs and found.compared == {"ch00": 0}
    assert "Skipped: no submission holds a module" in "\n".join(similarity.summary_lines(found, []))


def test_the_starter_code_is_boilerplate_not_evidence():
    with_stub = similarity.compare("ch00", "frank", STUB, "gina", STUB, STUB)
    without = similarity.compare("ch00", "frank", STUB, "gina", STUB, "")
    assert with_stub.score == 0.0 and without.score == 1.0


def results_for(students: dict[str, int]) -> list[score.StudentResult]:
    """One ch00 result per student with ``points`` of 10 (two tests of 5 and one of 0)."""
    specs = [
        score.TestSpec(
            f"exercises/ch00/test_t.py::test_{k}", "ch00", f"test_{k}", "ch00.1", 5, False, False
        )
        for k in range(2)
    ]
    found = []
    for student, points in students.items():
        records = {
            s.nodeid: {"outcome": "passed" if k < points // 5 else "failed", "message": "no"}
            for k, s in enumerate(specs)
        }
        found.append(score.score_student(student, specs, {"records": records}))
    return found


def test_pairs_are_shown_with_both_grades_the_level_and_the_source(tmp_path):
    classroom = CLASS | {"hal": ERIN_COPY}
    results = results_for({s: (10 if s in ("alice", "erin") else 5) for s in classroom})
    sources = {s: {"ch00/training_loop.py": code} for s, code in classroom.items()}
    found = similarity.find(sources, [CH00])
    similarity.write(tmp_path / "_instructor", found, results, ["ch00"])
    summary = report.summary_md(results, ["ch00"], found)
    assert "## Similar submissions" in summary
    assert re.search(
        r"\| ch00 \| alice \| 10/10 \| \*the reference solution\* \| — \| 100% ", summary
    )
    assert re.search(r"\| ch00 \| erin \| 10/10 \| hal \| 5/10 \| 100% \| 100% \| 75% \|", summary)
    assert "no more alike than each is to the reference" in summary
    own = (tmp_path / "_instructor" / "similarity.md").read_text()
    assert "7 submissions compared; 4 alike to the reference solution" in own
    assert "flag level 75% (the course-wide floor)" in own
    assert "| alice | 10/10 | bob |" not in own  # through the reference: in the CSV only
    assert "frank" not in own and "dan" not in own
    with open(tmp_path / "_instructor" / "similarity.csv") as f:
        rows = list(csv.DictReader(f))
    by_pair = {(r["student_a"], r["student_b"]): r for r in rows}
    assert by_pair["alice", "bob"]["common_source"] == "reference"
    assert by_pair["erin", "hal"]["common_source"] == ""
    assert by_pair["alice", similarity.REFERENCE]["grade_b"] == ""
    assert by_pair["erin", "hal"]["grade_a"] == "10/10"
    assert all(float(r["flag_level"]) == 0.75 and int(r["tokens"]) > 0 for r in rows)


HOSTILE = {
    '=HYPERLINK("http://x")': "csv formula",
    "<img src=x onerror=alert(1)>": "html",
    "[regrade approved](http://evil)": "markdown link",
    "a|b": "table pipe",
}


def test_student_names_are_escaped_in_both_reports(tmp_path):
    names = list(HOSTILE)
    classroom = {names[0]: CLASS["alice"], names[1]: CLASS["bob"], names[2]: CLASS["erin"]}
    classroom[names[3]] = ERIN_COPY
    sources = {s: {"ch00/training_loop.py": code} for s, code in classroom.items()}
    found = similarity.find(sources, [CH00])
    assert len(found.pairs) >= 4
    similarity.write(tmp_path, found, [], ["ch00"])
    own = (tmp_path / "similarity.md").read_text()
    assert "<img" not in own and "[regrade approved](" not in own
    assert all(escape.md_cell(name) in own for name in names)
    for line in own.splitlines():
        if line.startswith("| ch00"):
            assert line.count(" | ") == len(similarity.HEADER[1].split(" | ")) - 1, line
    with open(tmp_path / "similarity.csv") as f:
        cells = [c for row in csv.reader(f) for c in row]
    assert not any(c.startswith("=") for c in cells)
    assert '\'=HYPERLINK("http://x")' in cells


def test_the_reports_name_students_as_submitted_not_by_their_internal_ids(tmp_path):
    """An id is what a folder of outputs is named by (``zoe-astrom~1a2b``); the reports an
    instructor reads show the name the LMS gave (``Zoë Åström``)."""
    shown = {"zoe~1a": "Zoë Åström", "erin~2b": "O'Brien, Jr", "hal~3c": "=SUM(1+1)"}
    classroom = {"zoe~1a": CLASS["alice"], "erin~2b": CLASS["erin"], "hal~3c": ERIN_COPY}
    sources = {s: {"ch00/training_loop.py": code} for s, code in classroom.items()}
    found = similarity.find(sources, [CH00])
    assert any({p.a, p.b} == {"erin~2b", "hal~3c"} for p in found.pairs), found.pairs
    results = results_for({s: 10 for s in classroom})
    for r in results:
        r.name = shown[r.student]
    similarity.write(tmp_path, found, results, ["ch00"])
    own = (tmp_path / "similarity.md").read_text()
    summary = "\n".join(similarity.summary_lines(found, results))
    for text in (own, summary):
        assert escape.md_cell("O'Brien, Jr") in text and "erin~2b" not in text, text
    with open(tmp_path / "similarity.csv") as f:
        cells = {c for row in csv.reader(f) for c in row}
    assert "O'Brien, Jr" in cells and "'=SUM(1+1)" in cells and "hal~3c" not in cells, cells


def test_grading_needs_no_copydetect_and_merged_entries_carry_their_sources(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "copydetect", None)  # import copydetect -> ImportError
    monkeypatch.setitem(sys.modules, "pygments", None)
    results = results_for({"alice": 10, "bob": 5})
    specs = [t.spec for t in results[0].tests]
    entries = {
        r.student: {
            "records": {
                t.spec.nodeid: {"outcome": "passed" if t.score else "failed"} for t in r.tests
            },
            "sources": {"ch00/training_loop.py": CLASS[r.student]},
        }
        for r in results
    }
    entries["zed"] = {"records": {}}  # an entry from an older journal: no sources, no pair
    written = outputs.write(tmp_path, [CH00], specs, entries).results
    assert [r.total for r in written] == [10, 5, 0]
    own = (tmp_path / "_instructor" / "similarity.md").read_text()
    assert "Skipped" not in own and "2 submissions compared" in own
    with open(tmp_path / "_instructor" / "similarity.csv") as f:
        pairs = {(r["student_a"], r["student_b"]) for r in csv.DictReader(f)}
    assert ("alice", "bob") in pairs and not any("zed" in p for p in pairs)


def test_a_rerun_canonicalises_only_the_modules_that_changed(tmp_path, monkeypatch):
    sources = {s: {"ch00/training_loop.py": code} for s, code in CLASS.items()}
    first = similarity.find(sources, [CH00], tmp_path)
    done = []
    real = similarity._canonical
    monkeypatch.setattr(
        similarity, "_canonical", lambda code, keep: done.append(code) or real(code, keep)
    )
    sources["dan"] = {"ch00/training_loop.py": CLASS["dan"] + "\nX = 1\n"}
    again = similarity.find(sources, [CH00], tmp_path)
    assert done == [sources["dan"]["ch00/training_loop.py"]]
    assert again.pairs == first.pairs
