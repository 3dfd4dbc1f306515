"""Weighted features of normalised text, one extractor per scheme.

:data:`EXTRACTORS` maps each scheme name to its :class:`Extractor`. Every
extractor takes *normalised* text (see :mod:`simhash_pg.text.normalize`) and
gives the distinct features with their weights, in no particular order, as
hashes (:func:`extract_hashed`) or by name (:func:`extract_named`);
:mod:`simhash_pg.text.simhash` votes the hashes and sorts the names for
display. A new scheme is one entry here and one in :mod:`.schemes`.

Per-token Python work is kept to a dict lookup: each distinct token's hash and
IDF are cached per process, so a corpus pays for hashing a word once.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from simhash_pg.text import charclass
from simhash_pg.text.charclass import HAN, alnum_only, has_alnum, word_pattern
from simhash_pg.text.normalize import to_simplified
from simhash_pg.text.schemes import Scheme

__all__ = [
    "EXTRACTORS",
    "HASH_SEED",
    "ArrayFeatures",
    "Extractor",
    "HashedFeatures",
    "chars_gram_hash",
    "clear_caches",
    "extract_hashed",
    "extract_named",
    "feature_hash",
    "resolve_auto",
    "warm_up",
    "warm_up_zh_words",
    "zh_words",
]

# Part of every scheme's definition (version 1): never change it.
HASH_SEED = 0x5348_5047_0000_0001

# (feature names, their hashes, their weights), distinct features, any order.
ArrayFeatures = tuple[list[str], npt.NDArray[np.uint64], npt.NDArray[np.float64]]

_xxh = xxhash.xxh3_64_intdigest

# (hashes, weights) of the distinct features, any order.
HashedFeatures = tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64]]

# Huge documents are tokenised in pieces of about this many characters, cut at
# a space, so that memory stays bounded by the vocabulary, not the text.
_CHUNK = 1 << 20
_CACHE_LIMIT = 2_000_000


def feature_hash(feature: str) -> int:
    """The stable 64-bit hash of one feature: xxh3_64 of its UTF-8, fixed seed."""
    return _xxh(feature.encode("utf-8"), HASH_SEED)


def resolve_auto(scheme: Scheme, text: str) -> Scheme:
    """The concrete scheme ``auto`` uses for this normalised text.

    ``chars`` with binary weights; shingles of ``short_n`` characters when the
    text has fewer than ``short`` letters, digits and marks, else of ``n``.
    A pure function of the text, so the stored ``auto`` dict covers it.
    """
    if scheme.name != "auto":
        return scheme
    return _concrete_chars(scheme, alnum_only(text))


def _chunks(text: str) -> Iterable[str]:
    """Pieces of ``text`` cut at spaces (normalised text has single spaces)."""
    if len(text) <= _CHUNK:
        yield text
        return
    start = 0
    end_all = len(text)
    while start < end_all:
        end = min(start + _CHUNK, end_all)
        if end < end_all:
            cut = text.rfind(" ", start + _CHUNK // 2, end)
            if cut > start:
                end = cut
        yield text[start:end]
        start = end


# --------------------------------------------------------------------------
# zh-tfidf

# Particles and conjunctions dropped by zh-tfidf (version 1). Deliberately
# short: a longer list (pronouns, 年/月/日, English function words) lowered the
# eval AUC, because TF-IDF already gives common words little weight and dates
# and pronouns do tell articles apart.
_ZH_DROP = frozenset("的 了 是 在 和 与 及 或 而 之 着 也 就 都 把 被".split())


def import_jieba() -> Any:
    """``import jieba`` without its invalid-escape warnings (old regex literals)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", SyntaxWarning)
        import jieba
    return jieba


class _Jieba:
    """A private jieba tokenizer and IDF table, loaded once per process (the table on
    first use).

    Private, so that words a user adds to jieba's global tokenizer (or a
    changed global dictionary) never change our fingerprints.
    """

    _lock = threading.Lock()
    _instance: _Jieba | None = None

    def __init__(self) -> None:
        jieba = import_jieba()

        logger = logging.getLogger("jieba")
        level = logger.level
        logger.setLevel(logging.WARNING)  # jieba announces every dictionary load
        try:
            tok = jieba.Tokenizer()
            tok.initialize()
        finally:
            logger.setLevel(level)
        self.tokenizer: Any = tok
        self._idf_path = Path(jieba.__file__).parent / "analyse" / "idf.txt"
        self._idf: tuple[dict[str, float], float] | None = None
        # Per-token caches, so a corpus hashes each word once.
        self.hashes: dict[str, int] = {}
        self.idfs: dict[str, float] = {}

    def _idf_table(self) -> tuple[dict[str, float], float]:
        """The IDF table and its median: only zh-tfidf reads them (a title's words
        need the tokenizer alone), so they load on first use (~30 MB)."""
        if self._idf is None:
            idf: dict[str, float] = {}
            with self._idf_path.open(encoding="utf-8") as fh:
                for line in fh:
                    word, _, value = line.strip().partition(" ")
                    if value:
                        idf[word] = float(value)
            values = sorted(idf.values())
            self._idf = idf, values[len(values) // 2]  # the median: jieba's own definition
        return self._idf

    @property
    def idf(self) -> dict[str, float]:
        return self._idf_table()[0]

    @property
    def median_idf(self) -> float:
        return self._idf_table()[1]

    @classmethod
    def get(cls) -> _Jieba:
        inst = cls._instance
        if inst is None:
            with cls._lock:
                if cls._instance is None:
                    cls._instance = cls()
                inst = cls._instance
        return inst

    def fill(self, tokens: list[str]) -> None:
        """Cache hash and IDF of new tokens; IDF 0.0 marks a dropped token."""
        if len(self.idfs) + len(tokens) > _CACHE_LIMIT:
            self.idfs.clear()
            self.hashes.clear()
        idf, median = self.idf, self.median_idf
        for tok in tokens:
            if tok in _ZH_DROP or not has_alnum(tok):
                self.hashes[tok], self.idfs[tok] = 0, 0.0
            else:
                self.hashes[tok], self.idfs[tok] = feature_hash(tok), idf.get(tok, median)


def warm_up_zh_words(texts: Iterable[Any]) -> None:
    """Load jieba's tokenizer now (~0.5 s) if one of ``texts`` has a Chinese character,
    so that processes forked after this inherit it instead of each loading it for the
    first Chinese title (:func:`simhash_pg.text.signatures.title_words`)."""
    if _Jieba._instance is None and any(
        isinstance(t, str) and HAN.search(t) is not None for t in texts
    ):
        _Jieba.get()


def zh_words(text: str) -> list[str]:
    """jieba's dictionary words of ``text`` (no HMM guesses: the same words on every
    machine), from the private tokenizer the fingerprints use."""
    return list(_Jieba.get().tokenizer.cut(text, HMM=False))


def clear_caches() -> None:
    """Forget the per-process hash and IDF caches (for cold-start benchmarks)."""
    _hash_cache.clear()
    _char_hash.clear()
    if _Jieba._instance is not None:
        _Jieba._instance.hashes.clear()
        _Jieba._instance.idfs.clear()


def _zh_tfidf(text: str, scheme: Scheme) -> ArrayFeatures:
    jb = _Jieba.get()
    counts: Counter[str] = Counter()
    cut = jb.tokenizer.cut
    for piece in _chunks(text):
        counts.update(cut(piece, HMM=scheme.hmm))
    toks = list(counts)
    idfs = jb.idfs
    missing = [t for t in toks if t not in idfs]
    if missing:
        jb.fill(missing)
        idfs = jb.idfs  # fill() may have started afresh
        missing = [t for t in toks if t not in idfs]
        if missing:  # the cache was cleared mid-way: fill what this text needs
            jb.fill(missing)
    # C-level iteration only: per-token Python work is the cost to keep down.
    size = len(toks)
    idf = np.fromiter(map(idfs.__getitem__, toks), np.float64, size)
    hashes = np.fromiter(map(jb.hashes.__getitem__, toks), np.uint64, size)
    weights = np.fromiter(counts.values(), np.float64, size) * idf
    keep = idf > 0
    hashes, weights = hashes[keep], weights[keep]
    names = [t for t, k in zip(toks, keep.tolist(), strict=True) if k]
    if scheme.top_n is not None and len(names) > scheme.top_n:
        wl = weights.tolist()
        order = sorted(range(len(names)), key=lambda i: (-wl[i], names[i]))[: scheme.top_n]
        names = [names[i] for i in order]
        hashes, weights = hashes[order], weights[order]
    return names, hashes, weights


# --------------------------------------------------------------------------
# words and chars

_hash_cache: dict[str, int] = {}


def _hashed(counts: Counter[str], weight: str) -> ArrayFeatures:
    cache = _hash_cache
    names = list(counts)
    missing = [f for f in names if f not in cache]
    if len(cache) + len(missing) > _CACHE_LIMIT:
        cache.clear()
        missing = names
    for f in missing:
        cache[f] = feature_hash(f)
    hashes = np.fromiter(map(cache.__getitem__, names), np.uint64, len(names))
    if weight == "binary":
        return names, hashes, np.ones(len(names))
    return names, hashes, np.fromiter(counts.values(), np.float64, len(names))


def _words(text: str, scheme: Scheme) -> ArrayFeatures:
    findall = word_pattern(text).findall
    counts: Counter[str] = Counter()
    for piece in _chunks(text):
        counts.update(findall(piece))
    return _hashed(counts, scheme.weight)


# chars: the hash of a shingle g of length L is
#     fmix64(SEED2 ^ XOR_j rotl64(xxh3_64(g[j]), L - 1 - j))
# (a cyclic-polynomial n-gram hash over per-character xxh3 values, made
# non-linear by MurmurHash3's 64-bit finaliser). It is computed for all
# shingles at once with NumPy, with no Python work per shingle.
_SEED2 = np.uint64(0x9E37_79B9_7F4A_7C15)
_FMIX1 = np.uint64(0xFF51_AFD7_ED55_8CCD)
_FMIX2 = np.uint64(0xC4CE_B9FE_1A85_EC53)
_char_hash: dict[int, int] = {}


def _fmix64(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    h = h ^ (h >> np.uint64(33))
    h *= _FMIX1
    h ^= h >> np.uint64(33)
    h *= _FMIX2
    h ^= h >> np.uint64(33)
    return h


def _rotl(x: npt.NDArray[np.uint64], r: int) -> npt.NDArray[np.uint64]:
    r %= 64
    if r == 0:
        return x
    out: npt.NDArray[np.uint64] = (x << np.uint64(r)) | (x >> np.uint64(64 - r))
    return out


def _unique(
    x: npt.NDArray[np.uint64] | npt.NDArray[np.uint32],
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """Sorted distinct values and their counts.

    By sorting: NumPy 2.x's hash-based np.unique is many times slower on
    millions of random 64-bit values.
    """
    s = np.sort(x, kind="stable" if x.dtype == np.uint32 else "quicksort")
    if not len(s):
        return s, np.empty(0, np.int64)
    first = np.empty(len(s), dtype=bool)
    first[0] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(s))).astype(np.int64)
    return s[starts], counts


def _char_hashes(cps: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint64]:
    uniq, _ = _unique(cps)
    inverse = np.searchsorted(uniq, cps)
    table = np.empty(len(uniq), dtype=np.uint64)
    get = _char_hash.get
    for i, cp in enumerate(uniq.tolist()):
        h = get(cp)
        if h is None:
            h = _char_hash[cp] = feature_hash(chr(cp))
        table[i] = h
    return table[inverse]


def chars_gram_hash(gram: str) -> int:
    """The hash of one ``chars`` shingle, computed one character at a time (reference)."""
    acc = 0
    size = len(gram)
    for j, ch in enumerate(gram):
        h = feature_hash(ch)
        r = (size - 1 - j) % 64
        acc ^= ((h << r) | (h >> (64 - r))) & 0xFFFF_FFFF_FFFF_FFFF if r else h
    return int(_fmix64(np.array([acc], dtype=np.uint64) ^ _SEED2)[0])


def _chars_hashed(
    stripped: str, n: int, weight: str
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64]]:
    size = len(stripped)
    if size == 0:
        return np.empty(0, np.uint64), np.empty(0, np.float64)
    if size < n:
        h = np.array([chars_gram_hash(stripped)], dtype=np.uint64)
        return h, np.ones(1)
    parts: list[npt.NDArray[np.uint64]] = []
    counts: list[npt.NDArray[np.int64]] = []
    total = size - n + 1
    for start in range(0, total, _CHUNK):
        # Pieces overlap by n - 1 characters: every shingle counted exactly once.
        piece = stripped[start : start + _CHUNK + n - 1]
        cps = np.frombuffer(piece.encode("utf-32-le"), dtype="<u4")
        ch = _char_hashes(cps)
        m = len(ch) - n + 1
        acc = ch[n - 1 : n - 1 + m].copy()
        for j in range(n - 1):
            acc ^= _rotl(ch[j : j + m], n - 1 - j)
        grams = _fmix64(acc ^ _SEED2)
        u, c = _unique(grams)
        parts.append(u)
        if weight != "binary":
            counts.append(c)
        del grams, acc, ch, cps
    if weight == "binary":
        if len(parts) == 1:
            return parts[0], np.ones(len(parts[0]))
        allh = np.concatenate(parts)
        del parts
        allh.sort()  # in place: about 8 bytes per distinct shingle
        keep = np.empty(len(allh), dtype=bool)
        keep[0] = True
        np.not_equal(allh[1:], allh[:-1], out=keep[1:])
        hashes = allh[keep]
        return hashes, np.ones(len(hashes))
    if len(parts) == 1:
        return parts[0], counts[0].astype(np.float64)
    # Merge the pieces' counts: a shingle may occur in several.
    allh = np.concatenate(parts)
    order = np.argsort(allh, kind="stable")
    allh = allh[order]
    allc = np.concatenate(counts)[order]
    first = np.empty(len(allh), dtype=bool)
    first[0] = True
    np.not_equal(allh[1:], allh[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return allh[starts], np.add.reduceat(allc, starts).astype(np.float64)


def _chars_named(stripped: str, n: int, weight: str) -> list[tuple[str, float]]:
    if 0 < len(stripped) < n:
        return [(stripped, 1.0)]
    grams = Counter(stripped[i : i + n] for i in range(len(stripped) - n + 1))
    return [(g, 1.0 if weight == "binary" else float(c)) for g, c in grams.items()]


def _concrete_chars(scheme: Scheme, stripped: str) -> Scheme:
    if scheme.name == "chars":
        return scheme
    n = scheme.short_n if len(stripped) < scheme.short else scheme.n
    return Scheme("chars", scheme.version, html=scheme.html, visible=scheme.visible,
                  t2s=scheme.t2s, n=n, weight="binary")


# --------------------------------------------------------------------------
# the registry: scheme name -> extractor


@dataclass(frozen=True)
class Extractor:
    """How one scheme turns normalised text into features.

    hashed
        (hashes, weights) of the distinct features: what the vote reads.
    named
        (feature, weight) pairs of the same features: what users look at.
    warm_up
        Load what it needs (dictionaries, patterns) now, e.g. before forking.
    """

    hashed: Callable[[str, Scheme], HashedFeatures]
    named: Callable[[str, Scheme], list[tuple[str, float]]]
    warm_up: Callable[[], object]


def _tokens(extract: Callable[[str, Scheme], ArrayFeatures], warm: Callable[[], object]
            ) -> Extractor:
    """An extractor for schemes whose features are named tokens, hashed one by one."""

    def hashed(text: str, scheme: Scheme) -> HashedFeatures:
        _, hashes, weights = extract(text, scheme)
        return hashes, weights

    def named(text: str, scheme: Scheme) -> list[tuple[str, float]]:
        feats, _, weights = extract(text, scheme)
        return list(zip(feats, weights.tolist(), strict=True))

    return Extractor(hashed, named, warm)


def _shingles_hashed(text: str, scheme: Scheme) -> HashedFeatures:
    stripped = alnum_only(text)
    c = _concrete_chars(scheme, stripped)
    return _chars_hashed(stripped, c.n, c.weight)


def _shingles_named(text: str, scheme: Scheme) -> list[tuple[str, float]]:
    stripped = alnum_only(text)
    c = _concrete_chars(scheme, stripped)
    return _chars_named(stripped, c.n, c.weight)


_SHINGLES = Extractor(_shingles_hashed, _shingles_named, charclass.warm_up)

# Every name in schemes.SCHEME_NAMES has an entry (a test checks it).
EXTRACTORS: dict[str, Extractor] = {
    "zh-tfidf": _tokens(_zh_tfidf, _Jieba.get),
    "words": _tokens(_words, charclass.warm_up),
    "chars": _SHINGLES,
    "auto": _SHINGLES,  # chars, with n chosen per text by resolve_auto
}


def extract_hashed(text: str, scheme: Scheme) -> HashedFeatures:
    """(hashes, weights) of the distinct features of normalised ``text``."""
    return EXTRACTORS[scheme.name].hashed(text, scheme)


def extract_named(text: str, scheme: Scheme) -> list[tuple[str, float]]:
    """(feature, weight) pairs of normalised ``text``, in no particular order."""
    return EXTRACTORS[scheme.name].named(text, scheme)


def warm_up(scheme: Scheme) -> None:
    """Load what ``scheme`` needs (jieba: about 0.5-1 s) now, e.g. before forking."""
    EXTRACTORS[scheme.name].warm_up()
    if scheme.t2s:
        to_simplified("漢")
