"""Generated inputs for hidden tests: Hypothesis, deterministic and bounded.

    from harness.generated import examples, given, st

    @examples(40)
    @given(n=st.integers(1, 6), m=st.integers(1, 6))
    def test_...(n, m): ...

Every run draws the same examples (``derandomize``), keeps no database, and has no
per-example deadline (a loaded 2-core machine must not fail a test). The first failing
example is reported as drawn, alone: shrinking it reruns the submission dozens of times
(a wrong answer's failure could take longer than the test's time limit and reach the
student as a timeout instead of its message), and several failures would reach the
student as one ExceptionGroup. Hypothesis is a grader and developer dependency: only
hidden tests use it, never public ones.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

__all__ = ["example", "examples", "given", "st"]


def examples(n: int = 30):
    """Settings for a hidden property test: ``n`` examples, the same ones every run, and
    the first failing one reported as drawn."""
    return settings(
        max_examples=n,
        phases=[Phase.explicit, Phase.generate],
        report_multiple_bugs=False,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
