"""The head size forgets the second pool (4x too many features) and the forward
flattens with view(-1, K): batches of 4 run, and four images become one row."""

EXPECT = r"view\(-1|batch"
SELECT = "head or architecture or mix"


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
        h, w = input_hw
        h, w = (h - 4) // 2, (w - 4) // 2  # conv5 and the first pool; the second pool is forgotten
        self.k = 16 * h * w
        self.head = nn.Linear(self.k, n_classes)

    def forward(self, x):
        return self.head(self.features(x).view(-1, self.k))
