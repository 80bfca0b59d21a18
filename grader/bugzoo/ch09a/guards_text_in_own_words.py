"""guard_reasons reads each failure from Dynamo's record but reports it in its own words
("x: shape guard failed"): the argument and kind are right, yet ``text`` is no longer
Dynamo's guard-failure message, so the expected and actual values it states are lost."""

EXPECT = r"Dynamo's (own )?text|guard-failure message"
SELECT = "reports_only_guards_that_failed"
TASK = "ch09a.4"
EDITS = [
    (
        "    found = [_classify(text) for texts in guard_failures.values() for text in texts]\n",
        "    found = [_classify(text) for texts in guard_failures.values() for text in texts]\n"
        '    found = [GuardReason(r.argument, r.kind, f"{r.argument}: {r.kind} guard failed") for r in found]\n',
    )
]
