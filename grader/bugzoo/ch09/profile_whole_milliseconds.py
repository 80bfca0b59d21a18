"""profile_top_ops floors the profiler's microseconds to whole milliseconds (// instead of /):
every operator under 1 ms reports 0."""

EXPECT = r"whole number of milliseconds"
SELECT = "op_stats"

EDITS = [("e.self_cpu_time_total / 1000.0", "e.self_cpu_time_total // 1000.0")]
