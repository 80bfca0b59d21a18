"""encode maps a character outside the vocabulary to id 0 instead of raising: the model
silently reads a newline wherever the text holds something it was never trained on."""

EXPECT = r"must raise"
SELECT = "unknown"


class CharTokenizer(CharTokenizer):
    def encode(self, text):
        return [self.stoi.get(c, 0) for c in text]
