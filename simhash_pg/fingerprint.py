"""64-bit SimHash fingerprints of text.

    >>> from simhash_pg import fingerprint, hamming
    >>> a = fingerprint("今天北京天气晴朗，适合出门散步。")
    >>> 0 <= a < 2**64
    True

How a fingerprint is made (DESIGN.md, steps 1-4):

1. normalise the text (:mod:`simhash_pg.normalize`);
2. extract weighted features under the scheme (:mod:`simhash_pg.features`);
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

import gc
import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Literal, TypeVar, overload

import numpy as np
import numpy.typing as npt
import xxhash

from simhash_pg.features import (
    HASH_SEED,
    extract_hashed,
    extract_named,
    resolve_auto,
    warm_up,
)
from simhash_pg.normalize import ensure_str, normalize
from simhash_pg.schemes import Scheme, get_scheme

T = TypeVar("T")

__all__ = ["Fingerprinter", "NoFeaturesError", "fingerprint", "fingerprint_features", "vote"]

_WEIGHT_SCALE = 1 << 16
_SMALL_VOTE = 2048
# _BYTE_BITS[v, j] = bit j of byte value v.
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
_BYTE_BITS = _BYTE_BITS.astype(np.float64)
_EXACT_LIMIT = float(2**52)
# A batch below this many characters is not worth starting processes for.
_PARALLEL_MIN_CHARS = 1 << 20
_PARALLEL_MIN_DOCS = 64


_NO_FEATURES = (
    "the text has no features to fingerprint (it is empty or only white space, "
    "punctuation or stop words)"
)


class NoFeaturesError(ValueError):
    """The text has nothing to fingerprint (empty, white space, punctuation...)."""


def vote(
    hashes: Sequence[int] | npt.NDArray[np.uint64],
    weights: Sequence[float] | npt.NDArray[np.float64],
) -> int:
    """The SimHash of features given as 64-bit hashes and positive weights.

    Tie rule: a bit whose weighted sum is exactly 0 is 0.

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
    packed = np.packbits(2.0 * ones > total, bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


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


class Fingerprinter:
    """Fingerprints texts under one scheme.

    ``scheme`` is anything :func:`simhash_pg.schemes.get_scheme` accepts:
    None (the default), a name such as ``"chars:n=4"``, a dict or a Scheme.
    """

    def __init__(self, scheme: Scheme | dict[str, Any] | str | None = None) -> None:
        self.scheme: Scheme = get_scheme(scheme)

    def __repr__(self) -> str:
        return f"Fingerprinter({self.scheme.to_json()})"

    def normalize(self, text: str) -> str:
        return normalize(text, html=self.scheme.html, t2s=self.scheme.t2s)

    def concrete_scheme(self, text: str) -> Scheme:
        """The scheme actually applied to ``text`` (differs only for ``auto``)."""
        return resolve_auto(self.scheme, self.normalize(text))

    def features(self, text: str) -> list[tuple[str, float]]:
        """Weighted features of ``text``, heaviest first (ties by feature).

        The same features and weights that :meth:`fingerprint` votes with, so
        two texts' lists show why their fingerprints differ.
        """
        feats = extract_named(self.normalize(text), self.scheme)
        if not feats:
            raise NoFeaturesError(_NO_FEATURES)
        return sorted(feats, key=lambda fw: (-fw[1], fw[0]))

    def fingerprint(self, text: str) -> int:
        """The unsigned 64-bit fingerprint of ``text``.

        Raises TypeError for a non-str, NoFeaturesError for a featureless text.
        """
        hashes, weights = extract_hashed(self.normalize(text), self.scheme)
        if not len(hashes):
            raise NoFeaturesError(_NO_FEATURES)
        return vote(hashes, weights)

    def _try(self, text: object) -> int | None:
        try:
            return self.fingerprint(text)  # type: ignore[arg-type]
        except (TypeError, NoFeaturesError):
            return None

    def _try_also(self, text: object, also: Callable[[str], Any]) -> tuple[int | None, Any]:
        """(fingerprint or None, also(normalised text)): one normalisation for both."""
        if not isinstance(text, str):
            return None, None
        norm = self.normalize(text)
        hashes, weights = extract_hashed(norm, self.scheme)
        if not len(hashes):
            return None, None
        return vote(hashes, weights), also(norm)

    def fingerprint_many_also(
        self, texts: Iterable[Any], also: Callable[[str], T], workers: int | None = None
    ) -> list[tuple[int | None, T | None]]:
        """:meth:`fingerprint_many` with ``on_error="none"``, plus ``also(normalised text)``.

        ``also`` runs where the fingerprint is computed (in the worker
        processes), on the text the fingerprint saw; it must be a module-level
        function (workers may be spawned). Both are None for a text that has
        no fingerprint.
        """
        items = list(texts)
        if workers is not None and (isinstance(workers, bool) or workers < 1):
            raise ValueError("workers must be None or an int >= 1")
        n = workers if workers is not None else self._auto_workers(items)
        n = min(n, len(items)) or 1
        if n == 1:
            return [self._try_also(t, also) for t in items]
        return _parallel(self, items, n, "none", also)

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
        if workers is not None and (isinstance(workers, bool) or workers < 1):
            raise ValueError("workers must be None or an int >= 1")
        if on_error == "raise":
            for t in items:  # fail fast, before any work, with the plain message
                ensure_str(t)
        n = workers if workers is not None else self._auto_workers(items)
        n = min(n, len(items)) or 1
        if n == 1:
            if on_error == "raise":
                return [self.fingerprint(t) for t in items]
            return [self._try(t) for t in items]
        return _parallel(self, items, n, on_error)

    def _auto_workers(self, items: list[Any]) -> int:
        if len(items) < _PARALLEL_MIN_DOCS:
            return 1
        size = sum(len(t) for t in items if isinstance(t, str))
        return _cpu_count() if size >= _PARALLEL_MIN_CHARS else 1


def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


# Set in the parent just before forking; forked workers read them from the
# memory they inherit, so the texts are never pickled to them.
_worker_fp: Fingerprinter | None = None
_worker_items: list[Any] | None = None

_Chunk = tuple[Scheme, "list[Any] | tuple[int, int]", str, "Callable[[str], Any] | None"]


def _work(args: _Chunk) -> list[Any]:
    scheme, chunk, on_error, also = args
    if isinstance(chunk, tuple):  # forked: a slice of the inherited batch
        assert _worker_items is not None
        texts: list[Any] = _worker_items[chunk[0] : chunk[1]]
    else:
        texts = chunk
    fp = _worker_fp if _worker_fp is not None and _worker_fp.scheme == scheme else None
    if fp is None:  # spawned worker (no fork on this platform)
        fp = Fingerprinter(scheme)
    if also is not None:
        return [fp._try_also(t, also) for t in texts]
    if on_error == "raise":
        return [fp.fingerprint(t) for t in texts]
    return [fp._try(t) for t in texts]


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_MASKABLE = hasattr(signal, "pthread_sigmask")


def _worker_signals() -> None:
    """A worker ignores Ctrl-C and dies quietly of SIGTERM.

    Ctrl-C reaches the whole process group: the parent decides (e.g. to
    finish the batch, which needs the workers), and no worker prints a
    KeyboardInterrupt traceback. SIGTERM (the process group terminated)
    kills a worker without a traceback, and the parent gets
    BrokenProcessPool instead of waiting forever. The parent blocked both
    signals around the fork, so none lands before this runs.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _MASKABLE:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def _parallel(
    fp: Fingerprinter, items: list[Any], n: int, on_error: str,
    also: Callable[[str], Any] | None = None,
) -> list[Any]:
    global _worker_fp, _worker_items
    # Load jieba, OpenCC and the regexes once, here, so forked workers inherit them.
    warm_up(fp.scheme)
    fork = sys.platform.startswith("linux")
    ctx = mp.get_context("fork" if fork else None)
    # Chunks of ~1/(4n) of the batch (by count) balance load without much IPC.
    size = max(1, min(512, len(items) // (n * 4) or 1))
    bounds = [(i, min(i + size, len(items))) for i in range(0, len(items), size)]
    chunks: list[_Chunk] = [
        (fp.scheme, b if fork else items[b[0] : b[1]], on_error, also) for b in bounds
    ]
    _worker_fp, _worker_items = fp, items
    # Frozen objects are skipped by the children's garbage collector, which
    # would otherwise write to (and so copy) every page of the inherited heap.
    gc.freeze()
    try:
        # Not multiprocessing.Pool: its map waits forever for the chunk of a
        # killed worker. The executor raises BrokenProcessPool instead, and
        # shuts its workers down without signalling them.
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=_worker_signals) as pool:
            # map submits every chunk, so the workers are forked here; the
            # parent's handlers (e.g. the CLI's) must not run in them
            old = (signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
                   if _MASKABLE else None)
            try:
                results = pool.map(_work, chunks)
            finally:
                if old is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old)
            parts = list(results)
    finally:
        gc.unfreeze()
        _worker_fp = _worker_items = None
    return [x for part in parts for x in part]


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
