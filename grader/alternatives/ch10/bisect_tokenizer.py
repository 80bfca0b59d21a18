"""CharTokenizer keeps only the sorted characters and finds an id with bisect (a binary
search) instead of a dict; decode indexes the sorted list. The same vocabulary, ids and
errors (a character that is not there raises KeyError)."""

import bisect  # noqa: E402


class CharTokenizer:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.vocab_size = len(self.chars)

    def encode(self, text):
        ids = []
        for c in text:
            i = bisect.bisect_left(self.chars, c)
            if i == len(self.chars) or self.chars[i] != c:
                raise KeyError(c)
            ids.append(i)
        return ids

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)
