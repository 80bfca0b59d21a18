"""Each length is read from the padded batch as the position after its last nonzero step:
a sequence that ends in a real zero (silence, token id 0) is counted short."""

EXPECT = r"zero|length"
SELECT = "pad_collate"


def pad_collate(batch):
    seqs = [torch.as_tensor(seq) for seq, _ in batch]
    padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    steps = padded.reshape(padded.shape[0], padded.shape[1], -1).ne(0).any(-1)  # (B, T)
    lengths = (steps * torch.arange(1, padded.shape[1] + 1)).amax(dim=1).to(torch.int64)
    targets = torch.stack([torch.as_tensor(t) for _, t in batch])
    return padded, lengths, targets
