"""The chapter's broken batch: y is the same window as x, so the model learns to copy the
current character and the loss collapses towards zero."""

EXPECT = r"follow|shift"
SELECT = "get_batch or targets_follow or every_window or beats_the_unigram"


def get_batch(data, block_size, batch_size, generator=None):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()])
    y = torch.stack([data[i : i + block_size] for i in starts.tolist()])
    return x, y
