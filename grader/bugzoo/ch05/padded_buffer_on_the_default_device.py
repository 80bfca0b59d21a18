"""The padded batch is a torch.zeros buffer in the sequences' dtype but on the default device,
filled row by row (held-out round 9, labelled correct by its writer): right on the CPU, but
sequences on a GPU come back padded on the CPU while their targets stay on the GPU."""

EXPECT = r"device"
SELECT = "device"
TASK = "ch05.2"


def pad_collate(batch):
    seqs = [torch.as_tensor(seq) for seq, _ in batch]
    lengths = torch.as_tensor([s.shape[0] for s in seqs], dtype=torch.long)
    padded = torch.zeros(
        (len(seqs), int(lengths.max())) + tuple(seqs[0].shape[1:]), dtype=seqs[0].dtype
    )
    for row, s in zip(padded, seqs):
        row.narrow(0, 0, s.shape[0]).copy_(s)
    targets = torch.stack([torch.as_tensor(t) for _, t in batch])
    return padded, lengths, targets
