"""encode gathers the ids in a numpy array and hands it back with list() instead of
.tolist(): the same numbers, but numpy integers (numpy.int64), not the Python ints that
encode -> list[int] promises; they compare equal to ints, so only the type of each id
tells them apart."""

import numpy as np  # noqa: E402

EXPECT = r"Python ints"
TASK = "ch10.1"
SELECT = "tokenizer"


class CharTokenizer(CharTokenizer):
    def encode(self, text):
        return list(np.array([self.stoi[c] for c in text], dtype=np.int64))
