"""The default sync synchronizes ``torch.device(device).type``, the string "cuda" without
an index: torch.cuda.synchronize then waits for the current device, so timing work on
"cuda:1" (while cuda:0 is current) never waits for it."""

EXPECT = r"another device"
SELECT = "synchronizes_cuda or defaults_cpu_and_cuda"


def _sync_and_clock(device, sync, clock):
    if sync is None:
        if torch.device(device).type == "cuda":

            def sync():
                torch.cuda.synchronize(torch.device(device).type)
        else:

            def sync():
                return None

    return sync, clock or time.perf_counter
