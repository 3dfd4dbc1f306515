"""Weighted features of normalised text, one extractor per scheme.

Every extractor takes *normalised* text (see :mod:`simhash_pg.normalize`) and
returns parallel lists ``(features, hashes, weights)`` in no particular order;
:mod:`simhash_pg.fingerprint` sorts them for display and votes the hashes.

Per-token Python work is kept to a dict lookup: each distinct token's hash and
IDF are cached per process, so a corpus pays for hashing a word once.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import unicodedata
import warnings
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import xxhash

from simhash_pg.schemes import Scheme

__all__ = [
    "HASH_SEED",
    "Features",
    "extract",
    "feature_hash",
    "han_share",
    "resolve_auto",
]

# Part of every scheme's definition (version 1): never change it.
HASH_SEED = 0x5348_5047_0000_0001

Features = tuple[list[str], list[int], list[float]]

_xxh = xxhash.xxh3_64_intdigest

# Huge documents are tokenised in pieces of about this many characters, cut at
# a space, so that memory stays bounded by the vocabulary, not the text.
_CHUNK = 1 << 20
_CACHE_LIMIT = 2_000_000


def feature_hash(feature: str) -> int:
    """The stable 64-bit hash of one feature: xxh3_64 of its UTF-8, fixed seed."""
    return _xxh(feature.encode("utf-8"), HASH_SEED)


# --------------------------------------------------------------------------
# Character classes


@lru_cache(maxsize=1)
def _mark_class() -> str:
    """A regex class body for all combining marks (Mn, Mc, Me).

    Python's ``\\w`` leaves them out, which would cut Devanagari, Thai and
    decomposed Latin words apart.
    """
    ranges: list[tuple[int, int]] = []
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me"):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )


@lru_cache(maxsize=1)
def _word_re() -> re.Pattern[str]:
    return re.compile(rf"[\w{_mark_class()}]+")


@lru_cache(maxsize=1)
def _nonalnum_re() -> re.Pattern[str]:
    # Everything that is not a letter, digit or combining mark (so "_" goes too).
    return re.compile(rf"(?:[^\w{_mark_class()}]|_)+")


_HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]+")
_ALNUM_RUN = re.compile(r"[^\W_]+")


def _run_len(pattern: re.Pattern[str], text: str) -> int:
    return sum(map(len, pattern.findall(text)))


def han_share(text: str) -> float:
    """Han characters / letters and digits, in normalised text (0.0 if none)."""
    total = _run_len(_ALNUM_RUN, text)
    return _run_len(_HAN_RUN, text) / total if total else 0.0


def resolve_auto(scheme: Scheme, text: str) -> Scheme:
    """The concrete scheme ``auto`` uses for this normalised text.

    ``chars`` with binary weights; shingles of ``short_n`` characters when the
    text has fewer than ``short`` letters, digits and marks, else of ``n``.
    A pure function of the text, so the stored ``auto`` dict covers it.
    """
    if scheme.name != "auto":
        return scheme
    size = len(_nonalnum_re().sub("", text))
    return Scheme(
        "chars",
        scheme.version,
        html=scheme.html,
        t2s=scheme.t2s,
        n=scheme.short_n if size < scheme.short else scheme.n,
        weight="binary",
    )


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


class _Jieba:
    """A private jieba tokenizer and IDF table, loaded once per process.

    Private, so that words a user adds to jieba's global tokenizer (or a
    changed global dictionary) never change our fingerprints.
    """

    _lock = threading.Lock()
    _instance: _Jieba | None = None

    def __init__(self) -> None:
        with warnings.catch_warnings():
            # jieba's regex literals trip invalid-escape warnings on first compile.
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", SyntaxWarning)
            import jieba

        logger = logging.getLogger("jieba")
        level = logger.level
        logger.setLevel(logging.WARNING)  # jieba announces every dictionary load
        try:
            tok = jieba.Tokenizer()
            tok.initialize()
        finally:
            logger.setLevel(level)
        self.tokenizer: Any = tok
        idf_path = Path(jieba.__file__).parent / "analyse" / "idf.txt"
        idf: dict[str, float] = {}
        with idf_path.open(encoding="utf-8") as fh:
            for line in fh:
                word, _, value = line.strip().partition(" ")
                if value:
                    idf[word] = float(value)
        self.idf = idf
        values = sorted(idf.values())
        self.median_idf = values[len(values) // 2]  # jieba's own definition
        # token -> (hash, idf); idf 0.0 marks a dropped token.
        self.cache: dict[str, tuple[int, float]] = {}

    @classmethod
    def get(cls) -> _Jieba:
        inst = cls._instance
        if inst is None:
            with cls._lock:
                if cls._instance is None:
                    cls._instance = cls()
                inst = cls._instance
        return inst

    def entry(self, token: str) -> tuple[int, float]:
        if token in _ZH_DROP or _ALNUM_RUN.search(token) is None:
            e: tuple[int, float] = (0, 0.0)
        else:
            e = (feature_hash(token), self.idf.get(token, self.median_idf))
        if len(self.cache) >= _CACHE_LIMIT:
            self.cache.clear()
        self.cache[token] = e
        return e


def warm_up(scheme: Scheme) -> None:
    """Load what ``scheme`` needs (jieba: about 0.5-1 s) now, e.g. before forking."""
    if scheme.name in ("zh-tfidf", "auto"):
        _Jieba.get()
    if scheme.name in ("words", "chars", "auto"):
        _word_re()
        _nonalnum_re()
    if scheme.t2s:
        from simhash_pg.normalize import _t2s

        _t2s("漢")


def _zh_tfidf(text: str, scheme: Scheme) -> Features:
    jb = _Jieba.get()
    counts: Counter[str] = Counter()
    cut = jb.tokenizer.cut
    for piece in _chunks(text):
        counts.update(cut(piece, HMM=scheme.hmm))
    get = jb.cache.get
    entry = jb.entry
    feats: list[str] = []
    hashes: list[int] = []
    weights: list[float] = []
    for tok, tf in counts.items():
        e = get(tok) or entry(tok)
        if e[1]:
            feats.append(tok)
            hashes.append(e[0])
            weights.append(tf * e[1])
    if scheme.top_n is not None and len(feats) > scheme.top_n:
        order = sorted(range(len(feats)), key=lambda i: (-weights[i], feats[i]))[: scheme.top_n]
        feats = [feats[i] for i in order]
        hashes = [hashes[i] for i in order]
        weights = [weights[i] for i in order]
    return feats, hashes, weights


# --------------------------------------------------------------------------
# words and chars

_hash_cache: dict[str, int] = {}


def _hashed(counts: Counter[str], weight: str) -> Features:
    cache = _hash_cache
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    feats = list(counts)
    hashes: list[int] = []
    append = hashes.append
    get = cache.get
    for f in feats:
        h = get(f)
        if h is None:
            h = cache[f] = feature_hash(f)
        append(h)
    if weight == "binary":
        return feats, hashes, [1.0] * len(feats)
    return feats, hashes, [float(c) for c in counts.values()]


def _words(text: str, scheme: Scheme) -> Features:
    findall = _word_re().findall
    counts: Counter[str] = Counter()
    for piece in _chunks(text):
        counts.update(findall(piece))
    return _hashed(counts, scheme.weight)


def _chars(text: str, scheme: Scheme, stripped: str | None = None) -> Features:
    n = scheme.n
    if stripped is None:
        stripped = _nonalnum_re().sub("", text)
    grams: Counter[str] | set[str]
    binary = scheme.weight == "binary"
    grams = set() if binary else Counter()
    if 0 < len(stripped) < n:
        grams.update((stripped,))  # shorter than one shingle: the whole text is one
    step = _CHUNK
    for start in range(0, max(len(stripped) - n + 1, 0), step):
        # Pieces overlap by n - 1 characters so no shingle is lost or doubled.
        piece = stripped[start : start + step + n - 1]
        stop = len(piece) - n + 1
        grams.update(map(piece.__getitem__, map(slice, range(stop), range(n, stop + n))))
    if binary:
        return _hashed(Counter(dict.fromkeys(grams, 1)), "binary")
    assert isinstance(grams, Counter)
    return _hashed(grams, "tf")


_EXTRACTORS = {"zh-tfidf": _zh_tfidf, "words": _words, "chars": _chars}


def extract(text: str, scheme: Scheme) -> Features:
    """Features, hashes and weights of normalised ``text`` under ``scheme``."""
    if scheme.name == "auto":
        stripped = _nonalnum_re().sub("", text)
        n = scheme.short_n if len(stripped) < scheme.short else scheme.n
        concrete = Scheme(
            "chars", scheme.version, html=scheme.html, t2s=scheme.t2s, n=n, weight="binary"
        )
        return _chars(text, concrete, stripped)
    return _EXTRACTORS[scheme.name](text, scheme)
