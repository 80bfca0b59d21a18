"""pad_collate allocates the padded batch with torch.zeros(B, T, ...) (the default float32),
copies the sequences in and converts the result back with .to(the sequences' dtype): the
dtype comes out right and small values survive, but every value float32 cannot hold is
rounded on the way (int64 ids past 2**24, float64 values with more than 24 significant
bits), where the contract keeps the sequences' values in their own dtype."""

EXPECT = r"padded|dtype|differ"
SELECT = "pad_collate"


def pad_collate(batch):
    seqs = [torch.as_tensor(seq) for seq, _ in batch]
    lengths = torch.tensor([len(seq) for seq in seqs], dtype=torch.int64)
    padded = torch.zeros(len(seqs), int(lengths.max()), *seqs[0].shape[1:], device=seqs[0].device)
    for b, seq in enumerate(seqs):
        padded[b, : len(seq)] = seq
    padded = padded.to(seqs[0].dtype)
    targets = torch.stack([torch.as_tensor(t) for _, t in batch])
    return padded, lengths, targets
