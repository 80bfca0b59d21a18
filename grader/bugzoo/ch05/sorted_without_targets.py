"""Sequences are sorted longest first (as pack_padded_sequence likes), but the targets are
left in the original order, so every label belongs to another sequence."""

EXPECT = r"order"
SELECT = "pad_collate"


def pad_collate(batch):
    seqs = sorted((torch.as_tensor(seq) for seq, _ in batch), key=len, reverse=True)
    lengths = torch.tensor([len(seq) for seq in seqs], dtype=torch.int64)
    padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    targets = torch.stack([torch.as_tensor(t) for _, t in batch])
    return padded, lengths, targets
