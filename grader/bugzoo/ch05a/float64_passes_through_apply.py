"""apply() converts only integer inputs to float: a float64 batch comes back float64, and
the model's float32 weights then refuse it (or everything silently runs in float64)."""

EXPECT = r"float32"
SELECT = "dtype or generated"


@dataclass(frozen=True)
class Normalizer:
    mean: torch.Tensor
    std: torch.Tensor

    def apply(self, x):
        shape = (1, -1) + (1,) * (x.dim() - 2)
        if not x.is_floating_point():
            x = x.float()
        return (x - self.mean.view(shape).to(x.dtype)) / self.std.view(shape).to(x.dtype)
