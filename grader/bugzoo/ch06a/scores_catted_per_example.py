"""Each example is scored by masked_mean on its own (a batch of one) and the rows joined
with torch.cat: right for every batch that holds an example, but a batch of none raises."""

EXPECT = r"no examples|B == 0"
TASK = "ch06a.2"


def sequence_scores(x, mask, head=None):
    if head is None:
        head = _feature_mean
    per_position = head(x).squeeze(-1)  # (B, T)
    return torch.cat(
        [masked_mean(per_position[b : b + 1], mask[b : b + 1], dim=1) for b in range(len(x))]
    )
