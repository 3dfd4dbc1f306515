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

from collections.abc import Sequence

import numpy as np

from simhash_pg.verify.jaccard import distinct_sorted, is_short, shingles

__all__ = [
    "DOC_NGRAM",
    "OVERLAP_THRESHOLD",
    "SHORT_NGRAM",
    "overlap",
    "overlap_many",
]

OVERLAP_THRESHOLD = 0.8
DOC_NGRAM = 5
SHORT_NGRAM = 2


def _ngram_for(a_norm: str, b_norm: str) -> int:
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
    size = _ngram_for(a_norm, b_norm) if n is None else n
    if size < 1:
        raise ValueError("n must be >= 1")
    values = (None if min(len(a_norm), len(b_norm)) < max(_SMALL, size)
              else _joint_overlaps(a_norm, [b_norm], size))
    if values is None:
        sa, sb = shingles(a_norm, size), shingles(b_norm, size)
        return len(sa & sb) / max(len(sa), len(sb))
    return values[0]


# Below this many characters (titles), Python sets beat NumPy's call overhead.
_SMALL = 64


def overlap_many(query_norm: str, candidates: Sequence[str]) -> list[float]:
    """``[overlap(query_norm, c) for c in candidates]``, equal value for value.

    A query is verified against all its candidates at once: the pairs of two
    long texts (5-grams) share one coding pass over the query and every
    candidate, so the cost is a dozen NumPy calls per query instead of a
    dozen per pair (a text near() has ~5-10 candidates). The codes are a
    bijection over the joint alphabet, so each value is exact; pairs the joint
    pass cannot code (a short side, or too large an alphabet) go through
    :func:`overlap`.
    """
    out = [0.0] * len(candidates)
    joint: list[int] = []
    for j, c in enumerate(candidates):
        if (len(query_norm) >= _SMALL and len(c) >= _SMALL and c != query_norm
                and _ngram_for(query_norm, c) == DOC_NGRAM):
            joint.append(j)
        else:
            out[j] = overlap(query_norm, c)
    if joint:
        values = _joint_overlaps(query_norm, [candidates[j] for j in joint], DOC_NGRAM)
        for j, v in zip(joint, values if values is not None else  # too wide: sets
                        [overlap(query_norm, candidates[j]) for j in joint], strict=True):
            out[j] = v
    return out


def _joint_overlaps(q: str, cands: list[str], n: int) -> list[float] | None:
    """Overlaps of ``q`` (>= n chars) with each of ``cands`` (>= n chars each) in one pass.

    The one coding of n-grams here (a pair is one candidate): code points
    pack as they are when ``n`` of them fit, else as dense ids over the
    texts' joint alphabet, so codes are a bijection with the n-gram strings
    and every overlap is exact. Each n-gram is coded as (n-gram, segment) in
    one int64, segment 0 the query and j + 1 candidate j, and sorted once:
    equal n-grams are then adjacent, the query's first. None when the codes
    do not fit in 63 bits (the caller uses sets).
    """
    texts = [q, *cands]
    lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    cps = np.frombuffer("".join(texts).encode("utf-32-le"), dtype="<u4")
    bits = int(cps.max()).bit_length()
    seg_bits = int(len(texts) - 1).bit_length()
    if bits * n + seg_bits <= 63:
        ids = cps.astype(np.int64)
    else:
        # dense ids by a table over the code points present: a gather, where
        # searchsorted over the alphabet cost ~half the pass on Chinese text
        present = np.zeros(int(cps.max()) + 1, dtype=bool)
        present[cps] = True
        alphabet = np.flatnonzero(present)
        bits = max(1, int(len(alphabet) - 1).bit_length())
        if bits * n + seg_bits > 63:
            return None
        table = np.empty(len(present), dtype=np.int64)
        table[alphabet] = np.arange(len(alphabet), dtype=np.int64)
        ids = table[cps]
    m = len(ids) - n + 1
    codes = ids[:m].copy()
    for j in range(1, n):  # in place: a 10-text pass is ~5,000 codes
        codes <<= bits
        codes |= ids[j : m + j]
    codes <<= seg_bits
    # the n-grams that lie inside one text, tagged with its segment
    codes |= np.repeat(np.arange(len(texts), dtype=np.int64), lens)[:m]
    inside = np.ones(m, dtype=bool)
    for end in np.cumsum(lens[:-1]).tolist():
        inside[end - n + 1 : end] = False
    keys = distinct_sorted(codes[inside])
    key_seg = keys & ((1 << seg_bits) - 1)
    grams = keys >> seg_bits
    # an n-gram is the query's too when its run of equal n-grams starts with segment 0
    starts = np.empty(len(keys), dtype=bool)
    starts[0] = True
    np.not_equal(grams[1:], grams[:-1], out=starts[1:])
    head = np.maximum.accumulate(np.where(starts, np.arange(len(keys)), 0))
    sizes = np.bincount(key_seg, minlength=len(texts))
    shared = np.bincount(key_seg[key_seg[head] == 0], minlength=len(texts))
    out: list[float] = (shared[1:] / np.maximum(sizes[1:], sizes[0])).tolist()
    return out

