"""time_fn on a CUDA device always synchronizes with torch.cuda.synchronize, dropping the
sync it was given (as if sync only mattered on the CPU)."""

EXPECT = r"only the default"
TASK = "ch09.1"

EDITS = [
    (
        "    sync, clock = _sync_and_clock(device, sync, clock)\n\n    def one_call",
        "    if torch.device(device).type == 'cuda':\n"
        "        sync = None\n"
        "    sync, clock = _sync_and_clock(device, sync, clock)\n\n    def one_call",
    )
]
