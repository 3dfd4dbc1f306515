"""Exact re-check of SimHash candidates: short-text verification and a precision guard.

A 64-bit SimHash of a 20-character title has too few features to be reliable:
one changed character moves it by 5-15 bits, and unrelated titles can land
close. So for short texts the store widens k (to :data:`SHORT_K`) and keeps
only candidates whose *exact* similarity passes :data:`SHORT_THRESHOLD`. The
same check can guard long texts too (:data:`LONG_K`, :data:`LONG_THRESHOLD`).

The similarity is the Jaccard index of the sets of character n-grams of the
*verification text*: the normalised text (:func:`simhash_pg.text.normalize.normalize`)
with everything but letters, digits and combining marks removed, so spacing,
punctuation and full-/half-width forms never count. n = 2 when either side is
short, else 3. Both choices were measured against ``rapidfuzz.fuzz.ratio`` on
``../shared/eval`` (``docs/quality.md``): Jaccard won on both pair sets.

    >>> a = verification_text("Stocks rally as oil falls")
    >>> b = verification_text("Stocks rally as oil falls - BBC News")
    >>> round(verify(a, b), 3)
    0.72
    >>> is_near_duplicate(a, a)
    True
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Final, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from simhash_pg.text.charclass import alnum_only
from simhash_pg.text.normalize import normalize

__all__ = [
    "KEEP_TEXT_CHARS",
    "LONG_K",
    "LONG_NGRAM",
    "LONG_THRESHOLD",
    "SHORT_K",
    "SHORT_NGRAM",
    "SHORT_TEXT_CHARS",
    "SHORT_THRESHOLD",
    "TEXT_LOST",
    "VERIFY_MODES",
    "Candidate",
    "StoredText",
    "VerifyMode",
    "accept",
    "alnum_only",
    "filter_candidates",
    "is_near_duplicate",
    "is_short",
    "keep_text",
    "ngram_for",
    "query_k",
    "shingles",
    "similarity",
    "threshold_for",
    "verification_text",
    "verify",
]

# A text is short when its verification text has fewer characters than this.
# Titles and comments fall below, every news article and licence above.
SHORT_TEXT_CHARS = 50
# Measured on pairs_short.jsonl (docs/quality.md): F1 of "Hamming <= k and
# Jaccard >= threshold" is 0.927 at k = 11 (0.918 on a second draw of the set)
# and creeps up only slowly beyond; k <= 11 still needs only 2-bit probes per
# 16-bit block in the store, like k = 8.
SHORT_K = 11
SHORT_NGRAM = 2
SHORT_THRESHOLD = 0.72
# Long texts, when verification guards them. k = 11 is the largest k that
# still needs only 2-bit probes per block (k = 12 needs 3-bit probes: about 4x
# slower per query, measured). With the sentence signature OR-ed in (and
# verified too), texts of 200+ characters reach P 0.989, R 0.957 on two draws
# of the eval set (docs/quality.md); without it R is 0.949-0.950.
LONG_K = 11
LONG_NGRAM = 3
LONG_THRESHOLD = 0.78
# With verification only for short texts, a store needs the verification text
# of documents below this length: a pair with a short side and a side at least
# twice as long cannot reach SHORT_THRESHOLD, so longer texts need no copy.
KEEP_TEXT_CHARS = 2 * SHORT_TEXT_CHARS


def verification_text(text: str, *, html: bool = False, t2s: bool = True) -> str:
    """The text verification compares: normalised, letters, digits and marks only.

    ``html`` and ``t2s`` should match the store's fingerprint scheme. This is
    what a store keeps per document when verification is on.
    """
    return alnum_only(normalize(text, html=html, t2s=t2s))


def is_short(norm: str) -> bool:
    """Whether a verification text counts as short (< :data:`SHORT_TEXT_CHARS`)."""
    return len(norm) < SHORT_TEXT_CHARS


def ngram_for(a_norm: str, b_norm: str) -> int:
    """Shingle size for a pair: bigrams when either side is short, else trigrams."""
    return SHORT_NGRAM if is_short(a_norm) or is_short(b_norm) else LONG_NGRAM


def threshold_for(a_norm: str, b_norm: str) -> float:
    """The verification threshold for a pair (short if either side is short)."""
    return SHORT_THRESHOLD if is_short(a_norm) or is_short(b_norm) else LONG_THRESHOLD


def shingles(norm: str, n: int) -> frozenset[str]:
    """Set of character ``n``-grams; a text shorter than ``n`` is its own shingle."""
    if n < 1:
        raise ValueError("n must be >= 1")
    if len(norm) < n:
        return frozenset((norm,)) if norm else frozenset()
    return frozenset(norm[i : i + n] for i in range(len(norm) - n + 1))


def _gram_codes(norm: str, n: int) -> npt.NDArray[np.int64]:
    """Sorted distinct n-grams (n <= 3) as integers: 21 bits per code point.

    A bijection with the set of n-gram strings, so Jaccard is unchanged; NumPy
    makes a 2,000-character pair about 20x faster than Python sets.
    """
    cps = np.frombuffer(norm.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    if len(cps) < n:
        return cps[:0]
    codes = cps[: len(cps) - n + 1].copy()
    for j in range(1, n):
        codes = (codes << 21) | cps[j : len(cps) - n + 1 + j]
    return np.unique(codes)


def similarity(a_norm: str, b_norm: str, n: int | None = None) -> float:
    """Jaccard index of the character ``n``-gram sets (n from :func:`ngram_for`).

    1.0 for equal texts (two empty texts included), 0.0 when only one is empty.
    Symmetric, in [0, 1].
    """
    if a_norm == b_norm:
        return 1.0
    size = ngram_for(a_norm, b_norm) if n is None else n
    if not a_norm or not b_norm:
        return 0.0
    if size <= 3 and len(a_norm) >= size and len(b_norm) >= size:
        ga, gb = _gram_codes(a_norm, size), _gram_codes(b_norm, size)
        inter = len(np.intersect1d(ga, gb, assume_unique=True))
        return inter / (len(ga) + len(gb) - inter)
    sa, sb = shingles(a_norm, size), shingles(b_norm, size)
    inter = len(sa & sb)
    return inter / (len(sa) + len(sb) - inter)


def verify(query_norm: str, candidate_norm: str) -> float:
    """Similarity of a query and a candidate verification text (see :func:`similarity`)."""
    return similarity(query_norm, candidate_norm)


def is_near_duplicate(
    query_norm: str, candidate_norm: str, *, threshold: float | None = None
) -> bool:
    """Whether a candidate passes verification (threshold from :func:`threshold_for`)."""
    t = threshold_for(query_norm, candidate_norm) if threshold is None else threshold
    return verify(query_norm, candidate_norm) >= t


# --------------------------------------------------------------------------
# the store's policy, in one place

VerifyMode = Literal["off", "short", "all"]
VERIFY_MODES: tuple[VerifyMode, ...] = ("off", "short", "all")


class _Lost(enum.Enum):
    TEXT_LOST = "text lost"


# A stored row whose verification data is gone: stored before revision 0003
# made the columns, or before a downgrade past 0003 dropped them (the texts
# are not kept, so they cannot be recomputed). Unlike None ("not kept: too
# long for the mode, or a bare fingerprint"), it says nothing about length.
TEXT_LOST: Final = _Lost.TEXT_LOST
# What a stored row offers verification: its text, None or TEXT_LOST.
StoredText = str | None | Literal[_Lost.TEXT_LOST]


def _mode(mode: str) -> VerifyMode:
    if mode not in VERIFY_MODES:
        raise ValueError(f"verify mode must be one of {', '.join(VERIFY_MODES)}, got {mode!r}")
    return mode


def keep_text(norm: str, mode: VerifyMode = "short") -> bool:
    """Whether a store in ``mode`` keeps this document's verification text."""
    m = _mode(mode)
    return m == "all" or (m == "short" and len(norm) < KEEP_TEXT_CHARS)


def query_k(query_norm: str, k: int, mode: VerifyMode = "short") -> int:
    """The Hamming radius to ask the index for, so that :func:`accept` sees every candidate.

    A query below :data:`KEEP_TEXT_CHARS` may pair with a short text, so it
    looks as far as :data:`SHORT_K`; under ``"all"`` every query looks as far
    as :data:`LONG_K` too. Never less than ``k``.
    """
    m = _mode(mode)
    if m == "off":
        return k
    wide = max(k, SHORT_K) if len(query_norm) < KEEP_TEXT_CHARS else k
    return max(wide, LONG_K) if m == "all" else wide


def accept(
    query_norm: str,
    candidate_norm: StoredText,
    distance: int,
    k: int,
    mode: VerifyMode = "short",
    *,
    signature_match: bool = False,
) -> bool:
    """Whether a candidate the index returned is a near-duplicate of the query.

    - ``"off"``: ``distance <= k``, as a plain SimHash store.
    - a pair with a short side (under :data:`SHORT_TEXT_CHARS`):
      ``distance <= max(k, SHORT_K)`` and similarity >= :data:`SHORT_THRESHOLD`;
    - two long texts under ``"short"``: ``distance <= k``;
    - two long texts under ``"all"``: (``distance <= max(k, LONG_K)`` or the
      sentence signatures match) and similarity >= :data:`LONG_THRESHOLD`.

    ``candidate_norm`` None means the store kept no text for the candidate
    (under ``"short"``: it is at least :data:`KEEP_TEXT_CHARS` long). A short
    query cannot reach the threshold against it, and two long texts fall back
    to ``distance <= k``. The signature only counts under ``"all"``: unverified,
    it cost more precision than it gained recall (docs/quality.md).

    ``candidate_norm`` :data:`TEXT_LOST` means the row's text is unknown (its
    verification data was never stored or was dropped by a downgrade): the
    fingerprint alone decides, ``distance <= k``, as under ``"off"``, so that
    an identical text is still found.
    """
    m = _mode(mode)
    if m == "off" or candidate_norm is TEXT_LOST:
        return distance <= k
    if candidate_norm is None:
        return not is_short(query_norm) and distance <= k
    if is_short(query_norm) or is_short(candidate_norm):
        return distance <= max(k, SHORT_K) and (
            similarity(query_norm, candidate_norm) >= SHORT_THRESHOLD
        )
    if m == "all":
        return (distance <= max(k, LONG_K) or signature_match) and (
            similarity(query_norm, candidate_norm) >= LONG_THRESHOLD
        )
    return distance <= k


T = TypeVar("T")
# (payload, distance, candidate verification text (or None, TEXT_LOST), signature matched)
Candidate = tuple[T, int, StoredText, bool]


def filter_candidates(
    query_norm: str,
    candidates: Iterable[Candidate[T]],
    k: int,
    mode: VerifyMode = "short",
) -> list[tuple[T, int]]:
    """The candidates :func:`accept` keeps, as ``(payload, distance)``, nearest first.

    For ``near()``: ask the index at :func:`query_k`, LEFT JOIN the kept texts,
    pass the rows here (payload = the Match). For ``add(dedup=True)``: the
    first item, if any, is the document it duplicates. Ties keep input order.
    """
    kept = [
        (payload, dist)
        for payload, dist, norm, sig in candidates
        if accept(query_norm, norm, dist, k, mode, signature_match=sig)
    ]
    kept.sort(key=lambda pd: pd[1])
    return kept
