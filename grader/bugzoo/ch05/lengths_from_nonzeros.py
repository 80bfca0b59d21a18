"""The lengths are recovered from the padded tensor by counting its nonzero steps: a sequence
that holds a real zero (silence, token id 0, a zero feature vector) is counted short."""

EXPECT = r"zero|length"
SELECT = "pad_collate"


def pad_collate(batch):
    seqs = [torch.as_tensor(seq) for seq, _ in batch]
    padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    nonzero = padded != 0
    if nonzero.dim() > 2:
        nonzero = nonzero.flatten(2).any(dim=2)
    lengths = nonzero.sum(dim=1).to(torch.int64)
    targets = torch.stack([torch.as_tensor(t) for _, t in batch])
    return padded, lengths, targets
