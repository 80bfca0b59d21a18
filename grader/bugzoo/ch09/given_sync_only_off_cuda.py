"""time_fn builds its own sync: torch.cuda.synchronize(device) when the device's name says
cuda, else the given sync (or nothing), so a sync given for a CUDA device is never called."""

EXPECT = r"only the default"
TASK = "ch09.1"

EDITS = [
    (
        "    sync, clock = _sync_and_clock(device, sync, clock)\n\n    def one_call",
        "    _given = sync\n"
        "    sync, clock = _sync_and_clock(device, sync, clock)\n"
        "    if 'cuda' in str(device):\n\n"
        "        def sync() -> None:\n"
        "            torch.cuda.synchronize(device)\n"
        "    else:\n"
        "        sync = _given or (lambda: None)\n\n"
        "    def one_call",
    )
]
