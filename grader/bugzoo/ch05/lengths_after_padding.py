"""The lengths are read from the padded tensor, where every row is as long as the longest."""

EXPECT = r"length"
SELECT = "pad_collate"


def pad_collate(batch):
    seqs = [torch.as_tensor(seq) for seq, _ in batch]
    padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    lengths = torch.tensor([len(row) for row in padded], dtype=torch.int64)
    targets = torch.stack([torch.as_tensor(t) for _, t in batch])
    return padded, lengths, targets
