"""With no clock given, time_fn and ms_per_step read time.time (the wall clock: coarser, and
it jumps when the system time is set) instead of the contract's time.perf_counter. A
function that sleeps still times about right, so only a test that owns perf_counter sees it."""

EXPECT = r"default clock is time\.perf_counter"
SELECT = "defaults"
EDITS = [("    return sync, clock or time.perf_counter\n", "    return sync, clock or time.time\n")]
