"""Grades that say how they were made: every results.json, the summary and
``_instructor/provenance.json`` carry the course version, the hashes of the tests and
of the lock, the isolation mode and the limits; ``grader verify`` regrades a sample and
says whether the same hashes give the same grades, and refuses when they are not the
same. One small class on ch00."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import tomllib
from dataclasses import asdict

import pytest

from grader import grade, isolation, journal, merge, provenance, verify
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import SOLUTION, results, with_override, write_submission

pytestmark = pytest.mark.timeout(900)
BROKEN = "def gradient_at(w, x, target):\n    return 0.0\n"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("subs")
    out = tmp_path_factory.mktemp("out")
    write_submission(subs, "alice", SOLUTION)
    write_submission(subs, "bob", with_override(BROKEN))
    assert grade.main(subs, out, ["ch00"], jobs=2, gradebook=False) == 0
    return out


def _verify(out, **kwargs) -> tuple[int, str]:
    stream = io.StringIO()
    code = verify.main(out, stream=stream, **kwargs)
    return code, stream.getvalue()


def test_every_results_json_says_how_it_was_made(graded):
    prov = results(graded, "alice")["extra_data"]["provenance"]
    assert results(graded, "bob")["extra_data"]["provenance"] == prov
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert prov["course"]["version"] == version
    assert prov["course"]["commit"] is None or re.fullmatch(
        r"[0-9a-f]{40}", prov["course"]["commit"]
    )
    assert prov["chapters"] == ["ch00"]
    assert prov["tests_sha256"] == provenance.tests_hash([index.chapter("ch00")])
    assert (
        prov["lock_sha256"] == hashlib.sha256((REPO / "constraints.txt").read_bytes()).hexdigest()
    )
    assert prov["isolation"] == isolation.mode()
    assert prov["limits"] == asdict(grade.default_limits(2))
    assert prov["grading_key"] == journal.Journal(graded / ".journal").read_meta("expected")["key"]
    assert json.loads((graded / "_instructor" / "provenance.json").read_text()) == prov


def test_the_summary_says_how_the_grades_were_made(graded):
    prov = results(graded, "alice")["extra_data"]["provenance"]
    summary = (graded / "summary.md").read_text()
    assert "## How these grades were made" in summary
    assert prov["tests_sha256"] in summary and prov["lock_sha256"] in summary
    assert f"`{prov['isolation']}`" in summary and "grader verify" in summary


def test_the_tests_hash_covers_public_and_hidden_test_files(monkeypatch, tmp_path):
    ch00 = index.chapter("ch00")
    before = provenance.tests_hash([ch00])
    assert before != provenance.tests_hash([ch00, index.chapter("ch02")])
    for attr in ("public_tests", "hidden_tests"):
        original = getattr(ch00, attr)
        copy = tmp_path / attr / original.name
        copy.parent.mkdir()
        copy.write_bytes(original.read_bytes())
        with monkeypatch.context() as m:
            m.setattr(index.Chapter, attr, property(lambda self, p=copy: p))
            assert provenance.tests_hash([ch00]) == before, attr  # same content, same hash
            copy.write_text(original.read_text() + "\n# changed\n")
            assert provenance.tests_hash([ch00]) != before, attr


def test_merged_shards_carry_the_provenance(graded, tmp_path):
    assert merge.main([graded], tmp_path / "merged", gradebook=False) == 0
    for student in ("alice", "bob"):
        assert (
            results(tmp_path / "merged", student)["extra_data"]
            == results(graded, student)["extra_data"]
        )


def test_verify_regrades_and_finds_the_same_grades(graded):
    code, said = _verify(graded, students=["bob"])
    assert code == 0, said
    assert "the same grades" in said


def test_verify_reports_a_grade_the_same_tests_do_not_give(graded, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    jr = journal.Journal(out / ".journal")
    entry = jr.get("bob")
    failed = sorted(n for n, r in entry["records"].items() if r["outcome"] == "failed")
    assert failed
    entry["records"][failed[0]] = {"outcome": "passed"}
    jr.put("bob", entry)
    code, said = _verify(out, students=["bob"])
    assert code == 1, said
    assert "DIFFERENT" in said and failed[0] in said and "bob" in said


@pytest.mark.parametrize("field, words", [("tests_sha256", "tests"), ("lock_sha256", "lock")])
def test_verify_refuses_when_the_checkout_has_other_tests_or_lock(graded, tmp_path, field, words):
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    jr = journal.Journal(out / ".journal")
    prov = jr.read_meta("provenance")
    prov[field] = "0" * 64
    jr.write_meta("provenance", prov)
    code, said = _verify(out, sample=2)
    assert code == 2, said
    assert "refused" in said and words in said and "regrading" not in said


def test_verify_refuses_a_folder_without_provenance(graded, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    (out / ".journal" / "meta" / "provenance.json").unlink()
    code, said = _verify(out)
    assert code == 2 and "no provenance" in said


def test_verify_samples_deterministically():
    people = [f"s{i}" for i in range(50)]
    assert verify.choose(people, 5, 0) == verify.choose(people, 5, 0)
    assert len(verify.choose(people, 5, 0)) == 5
    assert verify.choose(people, 5, 0) != verify.choose(people, 5, 1)
    assert verify.choose(people[:3], 5, 0) == people[:3]


def test_verify_says_how_long_it_will_take_and_who_took_long():
    """A sample once drew the student whose code hangs and took 7.5 minutes in silence."""
    entries = {
        "a": {"execution_time": 10.0},
        "b": {"execution_time": 439.0, "name": "Zoë Åström"},
        "c": {"execution_time": 20.0},
    }
    text = verify.estimate(entries, ["a", "b", "c"], jobs=2)
    assert "about 439 s with --jobs 2" in text and "Zoë Åström took 439 s" in text
    assert "--student" in text
    quick = verify.estimate(entries, ["a", "c"], jobs=2)
    assert "about 20 s" in quick and "took" not in quick.split(")", 1)[1]
