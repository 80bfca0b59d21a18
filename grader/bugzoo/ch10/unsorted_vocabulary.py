"""The vocabulary is list(set(text)), unsorted: the order of a set of strings changes from
one Python process to the next (hash randomization), so a checkpoint's ids mean other
characters after a restart."""

EXPECT = r"sorted"
SELECT = "tokenizer"


class CharTokenizer(CharTokenizer):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.chars = list(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.itos = dict(enumerate(self.chars))
