"""A consume that raises ends the measurement instead of reaching the caller: the timing of
the batches before it is returned as if the loader had ended there, so a training step that
crashes (or raises StopIteration of its own) looks like a short epoch."""

EXPECT = r"consume's exception to reach the caller"
SELECT = "none_or_falsy"
TASK = "ch05.1"
EDITS = [
    (
        "            consume(batch)\n",
        """            try:
                consume(batch)
            except Exception:  # a failed step ends the measurement: report what was timed
                break
""",
    )
]
