"""The head is an nn.LazyLinear: shapes work out at the first forward, but the model has
no head weights when it is built (they cannot be counted or initialised, and their size is
never checked against input_hw)."""

EXPECT = r"lazy|construction"
SELECT = "head or architecture or mix or construction"


class SmallCNN(nn.Module):
    def __init__(self, in_channels, n_classes, input_hw):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 8, kernel_size=5),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.LazyLinear(n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))
