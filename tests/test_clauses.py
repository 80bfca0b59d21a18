"""Every sentence of every task's contract is traced to a test (``harness.clauses``): each
chapter's table in ``tests/clauses/`` holds exactly the sentences its docstrings and reading
state today, every one names tests that exist (or says why it states no contract), and the
invariants it names are the harness's own."""

from __future__ import annotations

import pytest

from harness import clauses, index


@pytest.mark.parametrize("chapter", list(index.chapters()))
def test_every_clause_of_the_contract_names_a_test(chapter):
    found = clauses.problems(chapter)
    assert not found, f"{chapter}'s clause table:\n  " + "\n  ".join(found)


def test_sentences_are_cut_where_a_reader_would_cut_them():
    text = (
        "Returns a Python float. Shapes (e.g. ``x.T``) stay; see `a.b`. A line ends here;\n"
        "slow: not yet.\n\n- a bullet\n- another. With two sentences."
    )
    assert clauses.split(text) == [
        "Returns a Python float.",
        "Shapes (e.g. ``x.T``) stay; see `a.b`.",
        "A line ends here;",
        "slow: not yet.",
        "a bullet",
        "another.",
        "With two sentences.",
    ]
