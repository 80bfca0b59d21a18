"""Course harness: choosing the target under test, the pytest plugin, the course index
and the in-process test runner shared by the project's own tests and the grader."""
