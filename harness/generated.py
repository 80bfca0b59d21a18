"""Generated inputs for hidden tests: Hypothesis, deterministic and bounded.

    from harness.generated import examples, given, st

    @examples(40)
    @given(n=st.integers(1, 6), m=st.integers(1, 6))
    def test_...(n, m): ...

Every run draws the same examples (``derandomize``), keeps no database, and has no
per-example deadline (a loaded 2-core machine must not fail a test). Hypothesis is a
grader and developer dependency: only hidden tests use it, never public ones.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

__all__ = ["examples", "given", "st"]


def examples(n: int = 30):
    """Settings for a hidden property test: ``n`` examples, the same ones every run."""
    return settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
