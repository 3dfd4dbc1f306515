"""64-bit SimHash fingerprints of text.

    >>> from simhash_pg import fingerprint, hamming
    >>> a = fingerprint("今天北京天气晴朗，适合出门散步。")
    >>> 0 <= a < 2**64
    True

How a fingerprint is made (docs/design.md, "From text to fingerprint"):

1. normalise the text (:mod:`simhash_pg.text.normalize`);
2. extract weighted features under the scheme (:mod:`simhash_pg.text.features`);
3. hash each distinct feature with xxh3_64 and a fixed seed;
4. vote: for each of the 64 bit positions, add the feature's weight where its
   hash has a 1 and subtract it where it has a 0. The fingerprint bit is 1
   where the sum is positive. **Tie rule: a sum of exactly 0 gives bit 0.**

Weights are rounded to multiples of 2**-16 and summed as 64-bit integers, so
the vote is exact: it does not depend on feature order, BLAS, threads or the
machine.

A text with no features (empty, only white space or punctuation, only stop
words) raises :class:`NoFeaturesError`: a constant fingerprint would make
every empty document a duplicate of every other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeVar, overload

import numpy as np
import numpy.typing as npt
import xxhash

from simhash_pg.text.charclass import alnum_only
from simhash_pg.text.features import (
    HASH_SEED,
    extract_hashed,
    extract_named,
    resolve_auto,
)
from simhash_pg.text.normalize import ensure_str, normalize, written
from simhash_pg.text.probes import Probes, block_probes
from simhash_pg.text.schemes import Scheme, get_scheme
from simhash_pg.text.workers import parallel, pool_size

T = TypeVar("T")

__all__ = [
    "Fingerprinter",
    "NoFeaturesError",
    "Probes",
    "TextPrint",
    "fingerprint",
    "fingerprint_features",
    "vote",
    "vote_with_margins",
]

_WEIGHT_SCALE = 1 << 16
_SMALL_VOTE = 2048
# _BYTE_BITS[v, j] = bit j of byte value v.
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
_BYTE_BITS = _BYTE_BITS.astype(np.float64)
_EXACT_LIMIT = float(2**52)


_NO_FEATURES = (
    "the text has no features to fingerprint (it is empty or only white space, "
    "punctuation or stop words)"
)


class NoFeaturesError(ValueError):
    """The text has nothing to fingerprint (empty, white space, punctuation...)."""


def vote_with_margins(
    hashes: Sequence[int] | npt.NDArray[np.uint64],
    weights: Sequence[float] | npt.NDArray[np.float64],
) -> tuple[int, npt.NDArray[np.int64]]:
    """The SimHash of features given as 64-bit hashes and positive weights, with its margins.

    ``margins[j]`` is bit ``j``'s weighted sum before its sign (``+w`` where
    the feature's hash has a 1, ``-w`` where it has a 0), in units of 2**-16.
    Bit ``j`` is set exactly when ``margins[j] > 0``: a bit whose sum is
    exactly 0 is 0. Small margins mark the bits that small edits flip
    (:mod:`simhash_pg.text.probes` ranks probes by them).

    Weights are rounded to multiples of 2**-16 first. Every partial sum is
    then an integer below 2**53, which float64 holds exactly, so the result
    does not depend on the order of the features or how NumPy adds.
    """
    h = np.asarray(hashes, dtype=np.uint64)
    w = np.asarray(weights, dtype=np.float64) * _WEIGHT_SCALE
    np.rint(w, out=w)
    if h.shape != w.shape or h.ndim != 1:
        raise ValueError("hashes and weights must be 1-d and of equal length")
    if not len(h):
        raise ValueError("no features to vote with")
    total = float(w.sum())
    if not 0.0 <= total < _EXACT_LIMIT or float(w.min()) < 0.0:  # NaN fails too
        raise ValueError("weights must be finite, >= 0 and total below 2**36")
    by = np.ascontiguousarray(h, dtype="<u8").view(np.uint8).reshape(-1, 8)
    if len(h) <= _SMALL_VOTE:
        # Few features: one features x 64 bit matrix and a matrix product.
        bits = np.unpackbits(by, axis=1, bitorder="little")  # column j = bit j
        ones = w @ bits
    else:
        # Many: a weighted histogram of each of the 8 bytes, then a 256 x 8
        # table turns byte sums into bit sums. 8 passes, no N x 64 matrix.
        ones = np.empty(64, dtype=np.float64)
        for k in range(8):
            hist = np.bincount(by[:, k], weights=w, minlength=256)
            ones[8 * k : 8 * k + 8] = hist @ _BYTE_BITS
    # Bit sum = (+w where 1) + (-w where 0) = 2 * ones - total: exact integers.
    margins = (2.0 * ones - total).astype(np.int64)
    packed = np.packbits(margins > 0, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little"), margins


def vote(
    hashes: Sequence[int] | npt.NDArray[np.uint64],
    weights: Sequence[float] | npt.NDArray[np.float64],
) -> int:
    """The SimHash of features given as 64-bit hashes and positive weights.

    :func:`vote_with_margins` without the margins.
    """
    return vote_with_margins(hashes, weights)[0]


def fingerprint_features(features: Iterable[tuple[str, float]] | Mapping[str, float]) -> int:
    """The SimHash of features you weighted yourself: ``[(feature, weight), ...]``.

    Each feature is hashed as ``zh-tfidf`` and ``words`` hash theirs (xxh3_64
    of its UTF-8, fixed seed), so feeding back ``Fingerprinter("zh-tfidf")
    .features(text)`` gives that scheme's fingerprint of ``text``. (``chars``
    shingles use a different, vectorised hash.) Duplicate features add up.
    """
    items = list(features.items() if isinstance(features, Mapping) else features)
    if not items:
        raise NoFeaturesError(_NO_FEATURES)
    xxh, seed = xxhash.xxh3_64_intdigest, HASH_SEED
    return vote([xxh(f.encode("utf-8"), seed) for f, _ in items], [w for _, w in items])


class TextPrint(NamedTuple):
    """What a store needs of one text, from one normalisation and one vote
    (:meth:`Fingerprinter.analyse`)."""

    fingerprint: int  # unsigned 64-bit
    norm: str  # Fingerprinter.normalize's output: what verification and the text keys read
    margins: npt.NDArray[np.int64]  # the 64 vote margins (vote_with_margins)
    probes: Probes | None  # margin-ranked probe values, when a budget was given


class Fingerprinter:
    """Fingerprints texts under one scheme.

    ``scheme`` is anything :func:`simhash_pg.text.schemes.get_scheme` accepts:
    None (the default), a name such as ``"chars:n=4"``, a dict or a Scheme.
    """

    def __init__(self, scheme: Scheme | dict[str, Any] | str | None = None) -> None:
        self.scheme: Scheme = get_scheme(scheme)

    def __repr__(self) -> str:
        return f"Fingerprinter({self.scheme.to_json()})"

    def normalize(self, text: str) -> str:
        s = self.scheme
        return normalize(text, html=s.html, t2s=s.t2s, visible=bool(s.visible),
                         ignorables=s.ignorables)

    def written(self, text: str) -> str:
        """``text`` as written, its markup removed as this scheme removes it: the
        visible text the fingerprint reads, with spaces, punctuation and case
        (:func:`simhash_pg.text.normalize.written`)."""
        s = self.scheme
        return written(text, html=s.html, visible=bool(s.visible),
                       deep=s.version >= 3 and bool(s.visible))

    def feature_text(self, text: str, norm: str | None = None) -> str:
        """The normalised text the features of ``text`` are taken from.

        :meth:`normalize`'s output (``norm``, if the caller has it), except
        under scheme version 3 with ``visible``, where markup escaped more
        than once is removed too (``normalize(..., deep=True)``). Only a text
        whose visible text still holds ``&`` or ``<`` is normalised again.
        """
        if norm is None:
            norm = self.normalize(text)
        s = self.scheme
        if s.version >= 3 and s.visible and ("&" in norm or "<" in norm):
            return normalize(text, t2s=s.t2s, visible=True, deep=True, ignorables=s.ignorables)
        return norm

    def concrete_scheme(self, text: str) -> Scheme:
        """The scheme actually applied to ``text`` (differs only for ``auto``)."""
        return resolve_auto(self.scheme, self.feature_text(text))

    def features(self, text: str) -> list[tuple[str, float]]:
        """Weighted features of ``text``, heaviest first, ties in the order they occur.

        The same features and weights that :meth:`fingerprint` votes with, so
        two texts' lists show why their fingerprints differ. Ties are common
        (binary weights make every feature 1), and text order reads better
        than the alphabet.
        """
        norm = self.feature_text(text)
        feats = extract_named(norm, self.scheme)
        if not feats:
            raise NoFeaturesError(_NO_FEATURES)
        # a shingle is found in the letters and digits run together, as it
        # was cut; a word as a word (or, unspaced as in Chinese, anywhere)
        flat, spaced = alnum_only(norm), f" {norm} "
        shingles = resolve_auto(self.scheme, norm).name == "chars"

        def first(feature: str) -> int:
            if shingles:
                return flat.find(feature)
            at = spaced.find(f" {feature} ")
            return at if at >= 0 else norm.find(feature) % (len(norm) + 1)

        return sorted(feats, key=lambda fw: (-fw[1], first(fw[0]), fw[0]))

    def fingerprint(self, text: str) -> int:
        """The unsigned 64-bit fingerprint of ``text``.

        Raises TypeError for a non-str, NoFeaturesError for a featureless text.
        """
        return self._vote(self.feature_text(text))

    def fingerprint_with_norm(self, text: str) -> tuple[int, str]:
        """The fingerprint of ``text`` and its normalised text (:meth:`normalize`).

        For callers that need both (the store derives the verification text
        from it): ``text`` is normalised once (twice where
        :meth:`feature_text` differs). Raises as :meth:`fingerprint`.
        """
        norm = self.normalize(text)
        return self._vote(self.feature_text(text, norm)), norm

    def fingerprint_with_margins(self, text: str) -> tuple[int, npt.NDArray[np.int64]]:
        """The fingerprint of ``text`` and its 64 vote margins, from one vote.

        ``margins[j]`` is bit ``j``'s weighted sum before its sign
        (:func:`vote_with_margins`). Raises as :meth:`fingerprint`.
        """
        return self._vote_margins(self.feature_text(text))

    def fingerprint_probes(self, text: str, t: int) -> tuple[int, Probes]:
        """The fingerprint of ``text`` and its margin-ranked probe values, ``t`` per block.

        :func:`simhash_pg.text.probes.block_probes` with squared margins, from one
        vote. Raises as :meth:`fingerprint`.
        """
        return self._probes(self.feature_text(text), t)

    def analyse(self, text: str, t: int | None = None) -> TextPrint:
        """``text``'s fingerprint, normalised text, margins and (with a budget ``t``
        per block) probe values, from one normalisation and one vote.

        What a store derives everything else from (the verification text and
        its keys come from ``norm``). Raises as :meth:`fingerprint`.
        """
        norm = self.normalize(text)
        fp, margins = self._vote_margins(self.feature_text(text, norm))
        return TextPrint(fp, norm, margins, None if t is None else block_probes(fp, margins, t))

    # The three below take feature_text's output.
    def _vote(self, feats: str) -> int:
        return self._vote_margins(feats)[0]

    def _vote_margins(self, feats: str) -> tuple[int, npt.NDArray[np.int64]]:
        hashes, weights = extract_hashed(feats, self.scheme)
        if not len(hashes):
            raise NoFeaturesError(_NO_FEATURES)
        return vote_with_margins(hashes, weights)

    def _probes(self, feats: str, t: int) -> tuple[int, Probes]:
        fp, margins = self._vote_margins(feats)
        return fp, block_probes(fp, margins, t)

    def fingerprint_or_none(self, text: object) -> int | None:
        """:meth:`fingerprint`, or None for a non-str or a featureless text."""
        try:
            return self.fingerprint(text)  # type: ignore[arg-type]
        except (TypeError, NoFeaturesError):
            return None

    def fingerprint_also(
        self, text: object, also: Callable[[str], Any], t: int | None = None
    ) -> tuple[int | None, Any, Probes | None]:
        """(fingerprint or None, also(normalised text), probe values or None): one vote.

        The probe values (``t`` per block) only when ``t`` is given.
        """
        if not isinstance(text, str):
            return None, None, None
        try:
            p = self.analyse(text, t)
        except NoFeaturesError:
            return None, None, None
        return p.fingerprint, also(p.norm), p.probes

    def fingerprint_many_also(
        self, texts: Iterable[Any], also: Callable[[str], T], workers: int | None = None
    ) -> list[tuple[int | None, T | None]]:
        """:meth:`fingerprint_many` with ``on_error="none"``, plus ``also(normalised text)``.

        ``also`` runs where the fingerprint is computed (in the worker
        processes), on the text the fingerprint saw; it must be a module-level
        function (workers may be spawned). Both are None for a text that has
        no fingerprint.
        """
        return [(fp, x) for fp, x, _ in self._many_also(texts, also, None, workers)]

    def fingerprint_many_probes(
        self, texts: Iterable[Any], also: Callable[[str], T], t: int,
        workers: int | None = None,
    ) -> list[tuple[int | None, T | None, Probes | None]]:
        """:meth:`fingerprint_many_also` plus each text's probe values (``t`` per block).

        The probe values are computed where the vote is (in the workers), so
        only 4 x ``t`` small ints per text come back, not the 64 margins.
        All three are None for a text that has no fingerprint.
        """
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise ValueError(f"the probe budget must be an int >= 1, got {t!r}")
        return self._many_also(texts, also, t, workers)

    def _many_also(
        self, texts: Iterable[Any], also: Callable[[str], Any], t: int | None,
        workers: int | None,
    ) -> list[tuple[int | None, Any, Probes | None]]:
        items = list(texts)
        n = pool_size(workers, items)
        if n == 1:
            return [self.fingerprint_also(x, also, t) for x in items]
        return parallel(self, items, n, "none", also, t)

    @overload
    def fingerprint_many(
        self,
        texts: Iterable[str],
        workers: int | None = None,
        *,
        on_error: Literal["raise"] = "raise",
    ) -> list[int]: ...

    @overload
    def fingerprint_many(
        self,
        texts: Iterable[object],
        workers: int | None = None,
        *,
        on_error: Literal["none"],
    ) -> list[int | None]: ...

    def fingerprint_many(
        self,
        texts: Iterable[Any],
        workers: int | None = None,
        *,
        on_error: Literal["raise", "none"] = "raise",
    ) -> list[int] | list[int | None]:
        """Fingerprints of many texts, in order.

        workers
            Processes to use. None: all available cores when the batch is big
            enough to repay starting them (about 1 MB of text), else 1.
            1: in this process.
        on_error
            ``"raise"``: a non-str anywhere in the batch raises TypeError
            before any work; else the first featureless text raises
            NoFeaturesError. ``"none"``: a text that is not a str or has no
            features gives None in its place.
        """
        if on_error not in ("raise", "none"):
            raise ValueError("on_error must be 'raise' or 'none'")
        items = list(texts)
        n = pool_size(workers, items)
        if on_error == "raise":
            for t in items:  # fail fast, before any work, with the plain message
                ensure_str(t)
        if n == 1:
            if on_error == "raise":
                return [self.fingerprint(t) for t in items]
            return [self.fingerprint_or_none(t) for t in items]
        return parallel(self, items, n, on_error)

_default: dict[Scheme, Fingerprinter] = {}


def fingerprint(text: str, *, scheme: Scheme | dict[str, Any] | str | None = None) -> int:
    """The unsigned 64-bit SimHash of ``text`` (0 <= result < 2**64).

    Raises TypeError if ``text`` is not a str and NoFeaturesError if it has
    nothing to fingerprint.
    """
    s = get_scheme(scheme)
    fp = _default.get(s)
    if fp is None:
        fp = _default.setdefault(s, Fingerprinter(s))
    return fp.fingerprint(text)
