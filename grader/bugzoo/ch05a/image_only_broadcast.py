"""apply() broadcasts the statistics as (1, C, 1, 1) whatever the input: right for images,
wrong for (N, C) features or (N, C, L) signals."""

EXPECT = r"trailing|\(N, C"
SELECT = "normalizer or apply"


@dataclass(frozen=True)
class Normalizer:
    mean: torch.Tensor
    std: torch.Tensor

    def apply(self, x):
        return (x.float() - self.mean.view(1, -1, 1, 1)) / self.std.view(1, -1, 1, 1)
