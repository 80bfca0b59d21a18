"""The padded batch is allocated with torch.zeros(B, T, ...) and its default dtype: token ids
come back as float32 (an embedding layer then refuses them, or worse, they get rounded)."""

EXPECT = r"int64|dtype"
SELECT = "pad_collate"


def pad_collate(batch):
    seqs = [torch.as_tensor(seq) for seq, _ in batch]
    lengths = torch.tensor([len(seq) for seq in seqs], dtype=torch.int64)
    padded = torch.zeros(len(seqs), int(lengths.max()), *seqs[0].shape[1:])
    for b, seq in enumerate(seqs):
        padded[b, : len(seq)] = seq
    targets = torch.stack([torch.as_tensor(t) for _, t in batch])
    return padded, lengths, targets
