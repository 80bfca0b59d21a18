"""diagnose stops its loop at the first non-finite loss, before backward: the remaining
steps never run, parameters look unreached (no_grad) and the poisoned gradients and
parameters go unreported."""

EXPECT = r"blames reachability|step\(\) \d+ times"
SELECT = "nonfinite_runs"

EDITS = [
    (
        '            nonfinite.setdefault("loss", f"the loss became {losses[-1]} at step {len(losses) - 1}")\n',
        '            nonfinite.setdefault("loss", f"the loss became {losses[-1]} at step {len(losses) - 1}")\n'
        "            break\n",
    )
]
