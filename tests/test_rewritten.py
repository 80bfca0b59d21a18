"""harness.rewritten: pytest's assertion rewrite of a test file is done once per process,
and again only when the file changes."""

from __future__ import annotations

from _pytest.assertion import rewrite

from harness import rewritten


def test_a_test_file_is_rewritten_once_and_again_when_it_changes(tmp_path):
    rewritten.keep()
    rewritten.keep()  # idempotent: one cache, not a cache of a cache
    path = tmp_path / "test_sample.py"
    path.write_text("def test_one():\n    assert 1 + 1 == 2\n")
    first = rewrite._rewrite_test(path, None)
    assert rewrite._rewrite_test(path, None)[1] is first[1]
    path.write_text("def test_one():\n    assert 2 + 2 == 4\n")
    changed = rewrite._rewrite_test(path, None)
    assert changed[1] is not first[1] and changed[0] != first[0]
    namespace: dict = {}
    exec(changed[1], namespace)
    namespace["test_one"]()  # the rewritten code runs
