"""``time_loader`` lets ``itertools.islice`` enforce the batch limit (it checks the count
before pulling, so no unused batch is fetched), keeps per-batch durations in lists summed
with ``math.fsum``, and reads the clock once more per batch (the loop's own bookkeeping is
counted as neither waiting nor working); ``pad_collate`` allocates the zero-filled
(B, T, ...) tensor itself and copies each sequence into the start of its row instead of
calling ``pad_sequence``. Both keep the contract's quantities exactly."""

import math
from itertools import islice


def time_loader(
    loader: Iterable, consume: Callable[[Any], Any], max_batches: int | None = None
) -> LoaderTiming:
    now = time.perf_counter
    waits: list[float] = []
    works: list[float] = []
    requested = now()
    source = iter(loader)  # starting the iterator (and any workers) is part of the first wait
    limited = islice(source, None if max_batches is None else max(max_batches, 0))
    try:
        for batch in limited:
            arrived = now()
            waits.append(arrived - requested)
            consume(batch)
            works.append(now() - arrived)
            requested = now()
    finally:
        # both objects reference the DataLoader iterator; dropping them shuts the workers down
        del limited, source
    return LoaderTiming(math.fsum(waits), math.fsum(works), len(works))


def pad_collate(
    batch: list[tuple[torch.Tensor, Any]],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    sequences = [torch.as_tensor(item[0]) for item in batch]
    sizes = [int(seq.shape[0]) for seq in sequences]
    longest = max(sizes)
    template = sequences[0]
    out = template.new_zeros((len(sequences), longest, *template.shape[1:]))
    for row, (seq, size) in enumerate(zip(sequences, sizes, strict=True)):
        out[row, :size] = seq
    labels = torch.stack([torch.as_tensor(item[1]) for item in batch])
    return out, torch.tensor(sizes, dtype=torch.int64), labels
