"""The default sync is chosen by comparing the device with the string "cuda": "cuda:0" and
torch.device("cuda") get no synchronize at all."""

EXPECT = r"torch\.device\(device\)\.type|torch\.cuda\.synchronize"
SELECT = "synchronizes_cuda or defaults"


def _sync_and_clock(device, sync, clock):
    if sync is None:
        if device == "cuda":

            def sync():
                torch.cuda.synchronize()
        else:

            def sync():
                return None

    return sync, clock or time.perf_counter
