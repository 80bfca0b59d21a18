"""pad_sequence's default layout is time-major: (T, B, ...) instead of (B, T, ...). With
B == T it even has the right shape."""

EXPECT = r"time-major|\(B, T"
SELECT = "pad_collate"


def pad_collate(batch):
    seqs = [torch.as_tensor(seq) for seq, _ in batch]
    lengths = torch.tensor([len(seq) for seq in seqs], dtype=torch.int64)
    padded = torch.nn.utils.rnn.pad_sequence(seqs)  # (T, B, ...)
    targets = torch.stack([torch.as_tensor(t) for _, t in batch])
    return padded, lengths, targets
