"""A module's fingerprint for the similarity report, and how much of one module's code
another module holds.

The module's canonical text (``grader/canonical.py``) is cut into Python tokens (its
canonical names kept: in a copy they are the original's) and every run of ``K``
consecutive tokens, a k-gram, is hashed. Every k-gram is kept: MOSS's winnowing keeps one
per window to save space over large corpora, which a class does not need, and a copy
with a statement slipped in every few lines keeps more of its evidence this way. K-grams
of the chapter's starter code are nobody's work and are left out.

How much of module A module B holds: the share of A's own tokens (those in at least one
k-gram not from the starter code) that lie in a k-gram B has too (copydetect's and
MOSS's measure). Hashes are 64-bit BLAKE2 digests: the same in every process and run.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass
from hashlib import blake2b

# Tokens per k-gram. Measured on every chapter (tests/test_similarity.py): shorter makes
# independent solutions look alike (the same few PyTorch calls), longer lets a statement
# slipped between every two statements hide more of a copy.
K = 8
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
STRUCTURE = {tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}


@dataclass(frozen=True)
class Print:
    hashes: tuple[int, ...]  # the k-gram starting at each token
    own: tuple[int, ...]  # the positions of the k-grams that are not the starter code's
    kgrams: frozenset[int]  # their hashes
    tokens: int  # tokens in at least one of them: the module's own code


def tokens(text: str) -> list[str]:
    """The tokens of Python source ``text``: blocks and line ends as ``{ } ;``."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in SKIPPED:
            found.append(STRUCTURE.get(token.type, token.string))
    return found


def kgrams(text: str) -> tuple[int, ...]:
    """The hash of the k-gram that starts at each token of ``text``."""
    words = [w.encode() for w in tokens(text)]
    return tuple(
        int.from_bytes(blake2b(b"\x00".join(words[i : i + K]), digest_size=8).digest())
        for i in range(len(words) - K + 1)
    )


def make(text: str, starter: frozenset[int] = frozenset()) -> Print:
    """The fingerprint of canonical ``text``, less the k-grams in ``starter``."""
    hashes = kgrams(text)
    own = tuple(i for i, h in enumerate(hashes) if h not in starter)
    print_ = Print(hashes, own, frozenset(hashes[i] for i in own), 0)
    return Print(hashes, own, print_.kgrams, covered(print_, None))


def covered(a: Print, other: frozenset[int] | None) -> int:
    """How many of ``a``'s own tokens lie in a k-gram that ``other`` holds (all k-grams
    when ``other`` is None)."""
    count = end = 0
    for i in a.own:
        if other is None or a.hashes[i] in other:
            start = max(i, end)
            end = i + K
            count += end - start
    return count


def shares(a: Print, b: Print) -> tuple[float, float, int]:
    """Of ``a``'s own code, the share ``b`` holds; of ``b``'s, the share ``a`` holds; and
    the larger count of matching tokens."""
    if not (a.tokens and b.tokens):
        return 0.0, 0.0, 0
    in_b, in_a = covered(a, b.kgrams), covered(b, a.kgrams)
    return in_b / a.tokens, in_a / b.tokens, max(in_b, in_a)


def overlap(a: Print, b: Print) -> float:
    """A cheap bound-free hint (sets only): the share of the smaller print's k-grams the
    other holds; a pair far below its flag level here is not worth ``shares``."""
    smaller = min(len(a.kgrams), len(b.kgrams))
    return len(a.kgrams & b.kgrams) / smaller if smaller else 0.0
