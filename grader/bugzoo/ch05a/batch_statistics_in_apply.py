"""apply() standardizes every batch with its own statistics (like BatchNorm in training
mode), so a brighter or darker validation set is silently made to look like training."""

EXPECT = r"own statistics|training statistics|training data only|stored statistics"
SELECT = "normalizer or apply or validation"


@dataclass(frozen=True)
class Normalizer:
    mean: torch.Tensor
    std: torch.Tensor

    def apply(self, x):
        x = x.float()
        dims = [d for d in range(x.dim()) if d != 1]
        return (x - x.mean(dim=dims, keepdim=True)) / x.std(dim=dims, keepdim=True)
