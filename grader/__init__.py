"""The course grader: collect → sandbox → run → score → report/export.

``python -m grader grade|check|release|merge`` (see ``grader/README.md``).
"""
