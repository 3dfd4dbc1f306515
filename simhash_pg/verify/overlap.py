"""Opt-in verification by the labelling rule itself: n-gram overlap over the larger set.

``verify.similarity`` is a Jaccard index (bigrams for short texts, trigrams
otherwise) with thresholds fitted to the eval set. The eval sets label a
pair by a different measure (``../shared/eval/README.md``):

    overlap(a, b) = |G(a) & G(b)| / max(|G(a)|, |G(b)|) >= 0.8

over the sets of character 5-grams (documents) or bigrams (titles) of the
letters, digits and marks of the visible text. The two disagree in ways that
matter on real edits: trigram sets saturate on long English text, so a copy
cut to 70% keeps a trigram Jaccard near 0.8 while its 5-gram overlap is 0.7;
and for equal-size sets Jaccard = o / (2 - o), so Jaccard 0.72 is an overlap
of 0.84, which rejects one changed digit in a 12-character title.

:func:`overlap` is that measure on verification texts (the store's
normalised letters, digits and marks), with the short/long split of
:mod:`simhash_pg.verify` deciding n. It has no parameter of its own to fit:
n and the threshold are the definition of a near-duplicate.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from simhash_pg.verify.jaccard import distinct_sorted, is_short, shingles

__all__ = ["DOC_NGRAM", "OVERLAP_THRESHOLD", "SHORT_NGRAM", "is_duplicate", "ngram_for", "overlap"]

OVERLAP_THRESHOLD = 0.8
DOC_NGRAM = 5
SHORT_NGRAM = 2


def ngram_for(a_norm: str, b_norm: str) -> int:
    """Bigrams when either verification text is short, else 5-grams."""
    return SHORT_NGRAM if is_short(a_norm) or is_short(b_norm) else DOC_NGRAM


def overlap(a_norm: str, b_norm: str, n: int | None = None) -> float:
    """``|A & B| / max(|A|, |B|)`` of the character n-gram sets; 0.0 when a side is empty.

    Symmetric, in [0, 1]; 1.0 for equal non-empty texts. A text shorter than
    ``n`` is its own only n-gram.
    """
    if not a_norm or not b_norm:
        return 0.0
    if a_norm == b_norm:
        return 1.0
    size = ngram_for(a_norm, b_norm) if n is None else n
    if size < 1:
        raise ValueError("n must be >= 1")
    codes = (None if min(len(a_norm), len(b_norm)) < _SMALL
             else _pair_codes(a_norm, b_norm, size))
    if codes is None:
        sa, sb = shingles(a_norm, size), shingles(b_norm, size)
        return len(sa & sb) / max(len(sa), len(sb))
    ga, gb = codes
    both = np.concatenate((ga, gb))
    both.sort()
    shared = int(np.count_nonzero(both[1:] == both[:-1]))  # each side's codes are distinct
    return shared / max(len(ga), len(gb))


# Below this many characters (titles), Python sets beat NumPy's call overhead.
_SMALL = 64


def _pair_codes(
    a: str, b: str, n: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Both texts' distinct n-grams as integers, or None when they do not fit in 63 bits.

    Code points below 2**(63 // n) (ASCII, Latin, Greek, Cyrillic ... for
    5-grams) pack as they are; others get dense ids over the pair's joint
    alphabet (a few hundred to a few thousand), so ``n`` ids of ``bits`` bits
    each pack into one int64: a bijection with the n-gram strings of this
    pair, so the overlap is exact.
    """
    if len(a) < n or len(b) < n:
        return None
    cps = np.frombuffer((a + b).encode("utf-32-le"), dtype="<u4")
    bits = int(cps.max()).bit_length()
    if bits * n <= 63:
        ids = cps.astype(np.int64)
    else:
        alphabet = distinct_sorted(cps.astype(np.int64))
        bits = max(1, int(len(alphabet) - 1).bit_length())
        if bits * n > 63:
            return None
        ids = np.searchsorted(alphabet, cps).astype(np.int64)

    def grams(x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        m = len(x) - n + 1
        codes = x[:m].copy()
        for j in range(1, n):
            codes = (codes << bits) | x[j : m + j]
        return distinct_sorted(codes)

    return grams(ids[: len(a)]), grams(ids[len(a) :])


def is_duplicate(a_norm: str, b_norm: str) -> bool:
    """Whether two verification texts are near-duplicates by the labelling rule."""
    return overlap(a_norm, b_norm) >= OVERLAP_THRESHOLD
