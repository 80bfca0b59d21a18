"""key_averages() read as averages: each operator is reported and ranked by its self time
per call (self_cpu_time_total / count), so many cheap calls look free."""

EXPECT = r"total over all its calls|time per call"
SELECT = "profile"

EDITS = [
    (
        "        OpStat(e.key, e.self_cpu_time_total / 1000.0, int(e.count)) for e in prof.key_averages()\n",
        "        OpStat(e.key, e.self_cpu_time_total / e.count / 1000.0, int(e.count))\n"
        "        for e in prof.key_averages()\n",
    ),
]
