# The course plugin (--impl, markers, task summary). The grader loads it with
# `-p harness.plugin` instead, because it runs with conftest files switched off.
pytest_plugins = ["harness.plugin"]
