"""What verification compares, and how: verification texts and their n-gram Jaccard.

The similarity is the Jaccard index of the sets of character n-grams of the
*verification text*: the normalised text (:func:`simhash_pg.text.normalize.normalize`)
with everything but letters, digits and combining marks removed, so spacing,
punctuation and full-/half-width forms never count. n = 2 when either side is
short, else 3. Both choices were measured against ``rapidfuzz.fuzz.ratio`` on
``../shared/eval`` (``docs/quality.md``): Jaccard won on both pair sets.

    >>> a = verification_text("Stocks rally as oil falls")
    >>> b = verification_text("Stocks rally as oil falls - BBC News")
    >>> round(similarity(a, b), 3)
    0.72

The store computes a text's :class:`VText` from the normalised text its
fingerprint was made of (:func:`from_norm`, :func:`from_norm_sig`), so a
text is normalised once per add.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from simhash_pg.text.charclass import alnum_only
from simhash_pg.text.normalize import normalize
from simhash_pg.text.signatures import minhash_keys, sentence_keys_normalized, title_keys

__all__ = [
    "LONG_NGRAM",
    "SHORT_NGRAM",
    "SHORT_TEXT_CHARS",
    "VText",
    "alnum_only",
    "from_norm",
    "from_norm_sig",
    "is_short",
    "sentence_keys",
    "shingles",
    "similarity",
    "verification_text",
]

# A text is short when its verification text has fewer characters than this.
# Titles and comments fall below, every news article and licence above.
SHORT_TEXT_CHARS = 50
# Texts this short get a title key (sentence_keys): twice the short length, so
# that both sides of a short pair (one side under 50 characters, the other a
# few characters longer) have one.
TITLE_KEY_TEXT_CHARS = 2 * SHORT_TEXT_CHARS
SHORT_NGRAM = 2
LONG_NGRAM = 3


def verification_text(
    text: str, *, html: bool = False, t2s: bool = True, visible: bool = True,
    ignorables: bool = True,
) -> str:
    """The text verification compares: normalised, letters, digits and marks only.

    ``html``, ``t2s``, ``visible`` and ``ignorables`` should match the
    store's fingerprint scheme (the defaults are the default scheme's;
    ``visible`` is ignored with ``html``). This is what a store keeps per
    document when verification is on.
    """
    return alnum_only(normalize(text, html=html, t2s=t2s, visible=visible and not html,
                                ignorables=ignorables))


def is_short(norm: str) -> bool:
    """Whether a verification text counts as short (< :data:`SHORT_TEXT_CHARS`)."""
    return len(norm) < SHORT_TEXT_CHARS


def _ngram_for(a_norm: str, b_norm: str) -> int:
    """Shingle size for a pair: bigrams when either side is short, else trigrams."""
    return SHORT_NGRAM if is_short(a_norm) or is_short(b_norm) else LONG_NGRAM


def shingles(norm: str, n: int) -> frozenset[str]:
    """Set of character ``n``-grams; a text shorter than ``n`` is its own shingle."""
    if n < 1:
        raise ValueError("n must be >= 1")
    if len(norm) < n:
        return frozenset((norm,)) if norm else frozenset()
    return frozenset(norm[i : i + n] for i in range(len(norm) - n + 1))


# A query is compared with each of its candidates in turn: the n-gram codes
# of recent texts are kept (read-only), so a query's are computed once per
# query. Only texts up to this length, to bound the memory (~3 MB).
_CACHED_CHARS = 20_000


def _gram_codes(norm: str, n: int) -> npt.NDArray[np.int64]:
    """Sorted distinct n-grams (n <= 3) as integers: 21 bits per code point.

    A bijection with the set of n-gram strings, so Jaccard is unchanged; NumPy
    makes a 2,000-character pair about 20x faster than Python sets.
    """
    return _cached_codes(norm, n) if len(norm) <= _CACHED_CHARS else _codes(norm, n)


def _codes(norm: str, n: int) -> npt.NDArray[np.int64]:
    cps = np.frombuffer(norm.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    if len(cps) < n:
        return cps[:0]
    codes = cps[: len(cps) - n + 1].copy()
    for j in range(1, n):
        codes = (codes << 21) | cps[j : len(cps) - n + 1 + j]
    out = distinct_sorted(codes)
    out.flags.writeable = False
    return out


def distinct_sorted(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The distinct values, sorted (``values`` is sorted in place).

    NumPy 2's hash-based ``np.unique`` costs about 8x as much on the few
    hundred to few thousand n-gram codes of one text.
    """
    values.sort()
    if len(values) < 2:
        return values
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


_cached_codes = functools.lru_cache(maxsize=16)(_codes)


def _common(ga: npt.NDArray[np.int64], gb: npt.NDArray[np.int64]) -> int:
    """How many values two sorted arrays of distinct values share (both non-empty)."""
    if len(ga) > len(gb):
        ga, gb = gb, ga
    at = np.searchsorted(gb, ga)
    np.minimum(at, len(gb) - 1, out=at)
    return int(np.count_nonzero(gb[at] == ga))


def similarity(a_norm: str, b_norm: str, n: int | None = None) -> float:
    """Jaccard index of the character ``n``-gram sets (n from :func:`_ngram_for`).

    1.0 for equal texts (two empty texts included), 0.0 when only one is empty.
    Symmetric, in [0, 1].
    """
    if a_norm == b_norm:
        return 1.0
    size = _ngram_for(a_norm, b_norm) if n is None else n
    if not a_norm or not b_norm:
        return 0.0
    if size <= 3 and len(a_norm) >= size and len(b_norm) >= size:
        ga, gb = _gram_codes(a_norm, size), _gram_codes(b_norm, size)
        inter = _common(ga, gb)
        return inter / (len(ga) + len(gb) - inter)
    sa, sb = shingles(a_norm, size), shingles(b_norm, size)
    inter = len(sa & sb)
    return inter / (len(sa) + len(sb) - inter)


class VText(NamedTuple):
    """What verification needs of one text document."""

    text: str  # the verification text (verification_text)
    sig: int | None  # signed sentence signature, when the policy needs it
    # the fingerprint's margin-ranked probe values of b0..b3 (smallint column
    # values), when the policy probes texts (VerifyPolicy.probes_texts)
    probes: tuple[list[int], list[int], list[int], list[int]] | None = None
    # signed hashes of its longest sentences, each on its own (with sig), and
    # its title keys or min-hash keys: what it looks up and a row stores
    hashes: tuple[int, ...] = ()
    # those of hashes that are min-hash keys (sentences_meet caps their meets)
    minhash: tuple[int, ...] = ()


# Module-level, so that fingerprinting workers can run them on the normalised
# text they fingerprint (Fingerprinter.fingerprint_many_also).
def from_norm(norm: str) -> VText:
    """VText of an already normalised text, without a signature."""
    return VText(alnum_only(norm), None)


def from_norm_sig(norm: str) -> VText:
    """VText of an already normalised text, with its sentence signature and hashes."""
    vtext = alnum_only(norm)
    minhash = minhash_keys(vtext)
    sig, hashes = sentence_keys(norm, vtext, minhash)
    return VText(vtext, sig, hashes=hashes, minhash=minhash)


# its title keys cut Chinese into jieba's words: a pool of workers that runs it
# loads jieba's tokenizer first, for them to inherit (simhash_pg.text.workers)
from_norm_sig.uses_zh_words = True  # type: ignore[attr-defined]


def sentence_keys(
    norm: str, vtext: str, minhash: tuple[int, ...] | None = None,
) -> tuple[int | None, tuple[int, ...]]:
    """A text's sentence keys: its signature, and the hashes of its longest sentences
    plus its :func:`minhash_keys` (``minhash``, if computed already) and, for a
    text under :data:`TITLE_KEY_TEXT_CHARS`, its :func:`title_keys`; sorted.

    ``vtext`` is ``norm``'s verification text. What the store keeps in
    ``sentence_signature`` and ``sentence_hashes``, and looks up.
    """
    sig, hashes = sentence_keys_normalized(norm)
    keys = minhash_keys(vtext) if minhash is None else minhash
    if len(vtext) < TITLE_KEY_TEXT_CHARS:
        keys += title_keys(norm, vtext)
    if keys:
        hashes = tuple(sorted({*hashes, *keys}))
    return sig, hashes
