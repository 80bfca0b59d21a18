"""The head is sized for the 28x28 images of the first experiment and never recomputed."""

EXPECT = r"derived|in_features"
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
        self.head = nn.Linear(16 * 6 * 6, n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))
