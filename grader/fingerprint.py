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
SAMPLE_EVERY = 4  # the share of k-grams (1 in this many) a pair is first judged on
SAMPLE_AT_LEAST = 32  # sampled k-grams below which the whole print is used
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
STRUCTURE = {tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}


@dataclass(frozen=True)
class Print:
    hashes: tuple[int, ...]  # the k-gram starting at each token
    own: tuple[int, ...]  # the positions of the k-grams that are not the starter code's
    kgrams: frozenset[int]  # their hashes
    tokens: int  # tokens in at least one of them: the module's own code
    sample: frozenset[int]  # those of them that are 0 modulo SAMPLE_EVERY


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
    mine = frozenset(hashes[i] for i in own)
    sample = frozenset(h for h in mine if h % SAMPLE_EVERY == 0)
    return Print(hashes, own, mine, _covered(hashes, own, None), sample)


def covered(a: Print, other: frozenset[int]) -> int:
    """How many of ``a``'s own tokens lie in a k-gram that ``other`` holds."""
    return _covered(a.hashes, a.own, other)


def _covered(hashes: tuple[int, ...], own: tuple[int, ...], other: frozenset[int] | None) -> int:
    """Tokens in the k-grams at positions ``own`` whose hash ``other`` holds (all of
    them when ``other`` is None), each token counted once."""
    count = end = 0
    for i in own:
        if other is None or hashes[i] in other:
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
    """A cheap estimate (sets only): the share of the smaller print's k-grams the other
    holds, judged on the 1 in ``SAMPLE_EVERY`` of them whose hash is 0 modulo it (the same
    k-grams in every module: a sample that keeps shared ones shared); a pair far below
    its flag level here is not worth ``shares``."""
    sa, sb = a.sample, b.sample
    if min(len(sa), len(sb)) < SAMPLE_AT_LEAST:
        sa, sb = a.kgrams, b.kgrams
    smaller = min(len(sa), len(sb))
    return len(sa & sb) / smaller if smaller else 0.0
