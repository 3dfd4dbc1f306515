"""A second, exact signature: the hash of a document's n longest sentences.

Baidu's method from the seed articles: a reprint usually keeps its longest
sentences verbatim while its header, footer, title line and formatting change,
so a hash of those sentences matches exactly across such reprints. It is
stored beside the SimHash and matched by equality.

How the signature is made (all of it is part of the definition; changing any
step means a new :data:`SIGNATURE_VERSION`):

1. normalise (:func:`simhash_pg.text.normalize.normalize`, same ``html``/``t2s``/
   ``visible`` as the store's scheme);
2. split into sentences after 。！？!?；; and after ``.`` or ``…`` followed by a
   space (NFKC has already turned full-width ！？；. into ASCII);
3. reduce each sentence to its letters, digits and marks (the verification
   text of :mod:`simhash_pg.verify`), so punctuation, spacing and line breaks
   never count;
4. take the ``n`` longest (ties broken by the text itself), sort them, join
   with U+001F and hash with xxh3_64 under :data:`SIGNATURE_SEED`.

Sorting the chosen sentences makes the signature blind to paragraph order.
A text with fewer than :data:`MIN_SIGNATURE_CHARS` characters in its chosen
sentences has no signature (None): a hash of two short lines would match
unrelated templated pages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import xxhash

from simhash_pg.bits import hamming_either, to_signed
from simhash_pg.text.charclass import HAN, alnum_only
from simhash_pg.text.normalize import normalize

__all__ = [
    "BOILERPLATE_HOLDERS",
    "DEFAULT_SENTENCES",
    "MINHASH_CAP",
    "MINHASH_KEYS",
    "MIN_SENTENCE_CHARS",
    "MIN_SIGNATURE_CHARS",
    "MIN_TITLE_KEY_CHARS",
    "SENTENCE_HASH_SEED",
    "SHARED_SENTENCE_CAP",
    "SIGNATURE_SEED",
    "SIGNATURE_VERSION",
    "TITLE_BAG_SEED",
    "TITLE_GAP_MAX_WORDS",
    "TITLE_GAP_SEED",
    "TITLE_GAP_TEXT_CHARS",
    "TITLE_GAP_TOKENS",
    "TITLE_GAP_WIDE_WORDS",
    "TITLE_KEY_SEED",
    "key_holders_found",
    "longest_sentences",
    "minhash_keys",
    "sentence_keys_normalized",
    "sentence_signature",
    "sentence_signature_normalized",
    "sentence_signature_signed",
    "sentences_meet",
    "split_sentences",
    "title_key",
    "title_keys",
    "title_words",
]

SIGNATURE_VERSION = 1
SIGNATURE_SEED = 0x5348_5047_5345_4E54  # "SHPGSENT"; part of version 1
DEFAULT_SENTENCES = 3
MIN_SIGNATURE_CHARS = 50
# Sentence hashes (revision 0015): each of the n longest sentences on its own,
# so that a reprint which keeps one of them verbatim is found even when the
# others changed. A sentence shorter than this says too little about its
# document to be a key (a dateline, "All rights reserved").
MIN_SENTENCE_CHARS = 30
SENTENCE_HASH_SEED = 0x5348_5047_5353_4E54  # "SHPGSSNT"
# A key (a sentence hash, a min-hash or title key) finds at most this many
# stored documents: each is a candidate that verification reads (50-150 us
# for a long text), so this bounds what a query's keys can cost. A key with
# more holders finds the SHARED_SENTENCE_CAP nearest the query (Hamming
# distance, ties by id), and one with more than BOILERPLATE_HOLDERS finds
# nothing: a licence line, a footer on every page of a site. Until revision
# 0018 a key with 17 holders found nothing, so a pair lost the key that found
# it as the store grew (issue 28: three licence pairs of the eval in a 1M-row
# store; the nearest 16 of at most 256 gave documents R 0.9928 in the model,
# lab/experiments/quality_at_scale.py). At a cap of 256 holders, all of them
# candidates, licence texts that share one sentence (171 holders in the eval
# set) made 1M-row text adds 0.58x as fast as under "short". The SQL's
# simhash_sentence_matches holds the same numbers and rule (tests keep them
# equal: tests/test_sentence_hashes.py).
SHARED_SENTENCE_CAP = 16
BOILERPLATE_HOLDERS = 256
# A short text's (a title's) key: its verification text without digits, so
# that a title whose numbers changed (a date, a count, a score: the tokens
# news titles edit most) meets its other version exactly. Fewer letters than
# this say too little to be a key. In the sentence hashes' column, under a
# seed of its own.
MIN_TITLE_KEY_CHARS = 8
TITLE_KEY_SEED = 0x5348_5047_5449_544C  # "SHPGTITL"
# A title's gap keys: its words (digits removed) with one run of up to this
# many words left out, the gap marked. The labelling rule takes a title as a
# duplicate while at most ~20% of its character bigrams differ, which on
# 10-40 characters is one edit of 2-7 characters: one or two words (a Chinese
# word is ~2 characters, an English one ~5). Two titles that differ by one
# such edit (a word swapped for another, a word or a site prefix added or
# left out) share a key: the edit's words fall in the gap of each. A title of
# n words has about 2n of them; each is almost the whole title, so few
# stored titles hold one.
TITLE_GAP_TOKENS = 2
# Only a text that can be a short text's duplicate has gap keys: one side
# under 50 characters has at most 48 bigrams, and the other may have at most
# 48 / 0.8 = 60 (61 characters). And a text's keys plus its 4 own block
# values stay within a query's look-up budget of 48
# (simhash_pg.verify.rule.LOOKUP_BUDGET): besides its gap keys a text under
# 62 letters has at most 7 (whole title, word set, two end gaps, two
# sentences of 30 and a signature), so gaps of 1 or 2 words up to 19 words
# (37 keys), of 1 word up to 37, none beyond.
TITLE_GAP_TEXT_CHARS = 62
TITLE_GAP_WIDE_WORDS = 19
TITLE_GAP_MAX_WORDS = 37
TITLE_GAP_SEED = 0x5348_5047_5447_4150  # "SHPGTGAP"
# The same texts' *word-set key*: their words sorted. The rule compares sets
# of bigrams, so a title whose clauses or words changed places stays a
# duplicate; the whole-title key is blind to that order, this one is not.
TITLE_BAG_SEED = 0x5348_5047_5442_4147  # "SHPGTBAG"
_DIGITS = re.compile(r"\d+")
_GAP_MARK = "\x1e"  # the left-out words

# Min-hash keys: a long text's character 8-grams, each hashed once to 64
# bits and put in one of 4 bins by its top two bits; a bin's key is its
# least value, the first MINHASH_KEYS bins give keys (one-permutation
# min-hashing: a sort instead of a pass per seed, half the time). Two texts
# share a bin's key with probability about the Jaccard similarity of their
# 8-gram sets: for scattered edits at the rule's threshold (5-gram overlap
# 0.8, an edit every ~23 characters) about 0.55, so some key meets with
# probability about 1 - 0.45**4 = 0.96, whatever the edits' layout.
# Scattered edits (typos, dropped characters) leave no sentence whole and
# spread the fingerprint past the probes' cap (lab.experiments.
# scattered_edits: 4% of Chinese characters dropped, recall 0.61 without
# them). In the sentence hashes' column, under the same holder cap, so a key
# must be specific to its article: a gram common to a language is the least
# of its bin in every text that holds it, and its key then finds nothing.
# Of the keys of 2,073 English news texts, 52% were held by more than 16
# texts with 5-grams, 26% with 6, 17% with 7, 7% with 8 (Chinese: 3.9% with
# 5, 1.5% with 8); n = 8 also spans two short English words.
MINHASH_KEYS = 4
# A key meets every stored variant of its article, near or far, and each is a
# candidate that verification reads: a meet by min-hash alone counts only
# within this many bits. Unrelated fingerprints differ in Binomial(64, 1/2)
# bits: fewer than 1% lie within 22, while a duplicate's (Jaccard >= 2/3 of
# its 5-grams; about cosine 0.8 of its features, 64 * acos(0.8) / pi = 13
# bits on average) lie within it by about three standard deviations.
MINHASH_CAP = 22
MINHASH_GRAM = 8
MIN_MINHASH_CHARS = 50  # the rule's long texts (shorter ones compare bigrams)
_GRAM_MUL = np.uint64(0x100000001B3)  # FNV's 64-bit prime: code points into a gram's value
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)  # splitmix64's finaliser
_MIX2 = np.uint64(0x94D049BB133111EB)
_BIN_STARTS = np.arange(4, dtype=np.uint64) << np.uint64(62)


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def minhash_keys(vtext: str) -> tuple[int, ...]:
    """The signed, sorted min-hash keys of a verification text of at least
    :data:`MIN_MINHASH_CHARS` characters (else none); an empty bin has none."""
    if len(vtext) < MIN_MINHASH_CHARS:
        return ()
    cps = np.frombuffer(vtext.encode("utf-32-le"), dtype="<u4").astype(np.uint64)
    n = len(cps) - MINHASH_GRAM + 1
    grams = cps[:n].copy()
    for j in range(1, MINHASH_GRAM):
        grams = grams * _GRAM_MUL + cps[j : j + n]
    values = np.sort(_mix(grams))
    # per kept bin, the least value at or above its start, if it lies in that bin
    starts = _BIN_STARTS[:MINHASH_KEYS]
    firsts = values[np.minimum(np.searchsorted(values, starts), n - 1)]
    return tuple(sorted(to_signed(int(v)) for b, v in enumerate(firsts) if int(v) >> 62 == b))


_SPLIT = re.compile(r"(?<=[。！？!?；;])|(?<=[.…])\s+")
_SEP = "\x1f"  # between sentences, and between a title's words


def split_sentences(norm: str) -> list[str]:
    """Sentences of normalised text, stripped, empty ones dropped."""
    return [s for s in (p.strip() for p in _SPLIT.split(norm)) if s]


def longest_sentences(
    text: str, n: int = DEFAULT_SENTENCES, *, html: bool = False, t2s: bool = True,
    visible: bool = True, ignorables: bool = True,
) -> list[str]:
    """The ``n`` longest sentences of ``text`` as verification text, sorted."""
    return _longest(normalize(text, html=html, t2s=t2s, visible=visible and not html,
                              ignorables=ignorables), n)


def _longest(norm: str, n: int) -> list[str]:
    if n < 1:
        raise ValueError("n must be >= 1")
    # Longest raw sentences first: a sentence loses characters to alnum_only,
    # never gains any, so once one is shorter than the n-th longest reduced
    # sentence so far, neither it nor any after it can be among the n. Most
    # sentences are never reduced (alnum_only was most of the signature's cost).
    parts = sorted(split_sentences(norm), key=len, reverse=True)
    sentences: set[str] = set()
    nth = 0  # the n-th longest reduced length so far (0 until there are n)
    for p in parts:
        if len(p) < nth:
            break
        s = alnum_only(p)
        if s and s not in sentences:
            sentences.add(s)
            if len(sentences) >= n:
                nth = sorted(map(len, sentences), reverse=True)[n - 1]
    return sorted(sorted(sentences, key=lambda s: (-len(s), s))[:n])


def _hash(chosen: list[str]) -> int | None:
    if sum(map(len, chosen)) < MIN_SIGNATURE_CHARS:
        return None
    return xxhash.xxh3_64_intdigest(_SEP.join(chosen).encode("utf-8"), SIGNATURE_SEED)


def sentence_signature(
    text: str, n: int = DEFAULT_SENTENCES, *, html: bool = False, t2s: bool = True,
    visible: bool = True, ignorables: bool = True,
) -> int | None:
    """Unsigned 64-bit hash of the ``n`` longest sentences, or None (too little text)."""
    return _hash(longest_sentences(text, n, html=html, t2s=t2s, visible=visible,
                                   ignorables=ignorables))


def sentence_signature_normalized(norm: str, n: int = DEFAULT_SENTENCES) -> int | None:
    """:func:`sentence_signature_signed` of text already normalised (saves a second pass)."""
    sig = _hash(_longest(norm, n))
    return None if sig is None else to_signed(sig)


def sentence_signature_signed(
    text: str, n: int = DEFAULT_SENTENCES, *, html: bool = False, t2s: bool = True,
    visible: bool = True, ignorables: bool = True,
) -> int | None:
    """:func:`sentence_signature` as the signed ``bigint`` a PostgreSQL column holds."""
    sig = sentence_signature(text, n, html=html, t2s=t2s, visible=visible,
                             ignorables=ignorables)
    return None if sig is None else to_signed(sig)


def _sentence_hashes(chosen: list[str]) -> tuple[int, ...]:
    return tuple(sorted(
        to_signed(xxhash.xxh3_64_intdigest(c.encode("utf-8"), SENTENCE_HASH_SEED))
        for c in chosen if len(c) >= MIN_SENTENCE_CHARS
    ))


def title_key(vtext: str) -> int | None:
    """The signed key of a short text's verification text ``vtext``: xxh3 of it with its
    digits removed, or None when fewer than :data:`MIN_TITLE_KEY_CHARS` characters remain."""
    bare = _DIGITS.sub("", vtext)
    if len(bare) < MIN_TITLE_KEY_CHARS:
        return None
    return to_signed(xxhash.xxh3_64_intdigest(bare.encode("utf-8"), TITLE_KEY_SEED))


def title_words(norm: str) -> list[str]:
    """The words of a short normalised text, as :func:`title_keys` counts them.

    Space-separated words reduced to their letters and marks (digits
    removed); a word with Chinese characters is cut into jieba's dictionary
    words (:func:`simhash_pg.text.features.zh_words`), since Chinese has no spaces.
    """
    out: list[str] = []
    for raw in norm.split():
        word = alnum_only(_DIGITS.sub("", raw))
        if not word:
            continue
        if HAN.search(word):
            from simhash_pg.text.features import zh_words  # jieba only when needed

            out.extend(w for w in map(alnum_only, zh_words(word)) if w)
        else:
            out.append(word)
    return out


def title_keys(norm: str, vtext: str) -> tuple[int, ...]:
    """A short text's keys: its :func:`title_key`, word-set key and gap keys, signed, sorted.

    ``vtext`` is ``norm``'s verification text. The word-set key is the xxh3
    (under :data:`TITLE_BAG_SEED`) of :func:`title_words` sorted, for two
    words and :data:`MIN_TITLE_KEY_CHARS` letters or more. A gap key is the xxh3 (under
    :data:`TITLE_GAP_SEED`) of :func:`title_words` with one run of 1 to
    :data:`TITLE_GAP_TOKENS` words replaced by a gap mark, for each such run
    that leaves at least two words and :data:`MIN_TITLE_KEY_CHARS` letters,
    and with a gap mark put before them and after them (an end gap of no word);
    both only for a ``vtext`` under :data:`TITLE_GAP_TEXT_CHARS` and up to
    :data:`TITLE_GAP_MAX_WORDS` words, gaps of one word only above
    :data:`TITLE_GAP_WIDE_WORDS` words.
    """
    keys: set[int] = set()
    whole = title_key(vtext)
    if whole is not None:
        keys.add(whole)
    words = title_words(norm) if len(vtext) < TITLE_GAP_TEXT_CHARS else []
    if not (2 <= len(words) <= TITLE_GAP_MAX_WORDS
            and sum(map(len, words)) >= MIN_TITLE_KEY_CHARS):
        return tuple(sorted(keys))
    keys.add(_words_key(sorted(words), TITLE_BAG_SEED))
    # gaps of no word at either end: a site prefix or suffix of 1-2 words is
    # the other title's gap there
    keys.add(_words_key([_GAP_MARK, *words], TITLE_GAP_SEED))
    keys.add(_words_key([*words, _GAP_MARK], TITLE_GAP_SEED))
    widest = TITLE_GAP_TOKENS if len(words) <= TITLE_GAP_WIDE_WORDS else 1
    for width in range(1, widest + 1):
        for i in range(len(words) - width + 1):
            kept = words[:i] + words[i + width:]
            if len(kept) >= 2 and sum(map(len, kept)) >= MIN_TITLE_KEY_CHARS:
                keys.add(_words_key([*words[:i], _GAP_MARK, *words[i + width:]],
                                    TITLE_GAP_SEED))
    return tuple(sorted(keys))


def _words_key(words: list[str], seed: int) -> int:
    return to_signed(xxhash.xxh3_64_intdigest(_SEP.join(words).encode("utf-8"), seed))


def sentence_keys_normalized(
    norm: str, n: int = DEFAULT_SENTENCES
) -> tuple[int | None, tuple[int, ...]]:
    """Signed signature and the signed, sorted hashes of each of the ``n`` longest
    sentences of at least :data:`MIN_SENTENCE_CHARS` characters (one pass)."""
    chosen = _longest(norm, n)
    sig = _hash(chosen)
    return (None if sig is None else to_signed(sig)), _sentence_hashes(chosen)


def sentences_meet(
    sig_a: int | None, hashes_a: tuple[int, ...] | list[int] | None,
    sig_b: int | None, hashes_b: tuple[int, ...] | list[int] | None,
    minhash_a: tuple[int, ...] | list[int] = (), distance: int = 0,
) -> bool:
    """Whether two texts' sentence keys meet: equal signatures, a shared sentence
    hash, or a shared min-hash key (``minhash_a``: those of a's hashes) with the
    fingerprints within :data:`MINHASH_CAP` bits (``distance``).

    The one definition of a sentence match, for the store's look-ups, its
    in-batch index and the eval's model.
    """
    if sig_a is not None and sig_a == sig_b:
        return True
    if not hashes_a or not hashes_b:
        return False
    shared = set(hashes_a).intersection(hashes_b)
    if not shared:
        return False
    return distance <= MINHASH_CAP or not shared.issubset(minhash_a)


def key_holders_found(
    holders: Iterable[tuple[int, int]], fp: int | None,
) -> list[int]:
    """The ids one key finds for a query with fingerprint ``fp``: the look-up's rule.

    ``holders`` are the stored rows that hold the key, as ``(id, fingerprint)``
    (fingerprints signed or not, alike with ``fp``). At most
    :data:`SHARED_SENTENCE_CAP` holders: all of them; at most
    :data:`BOILERPLATE_HOLDERS`: the :data:`SHARED_SENTENCE_CAP` nearest ``fp``,
    ties by id (none without ``fp``); more: none. The model of SQL
    ``simhash_sentence_matches`` (sql/current/near_probes.sql), nearest first.
    """
    rows = list(holders)
    if len(rows) > BOILERPLATE_HOLDERS or (len(rows) > SHARED_SENTENCE_CAP and fp is None):
        return []
    if fp is None:
        return sorted(i for i, _ in rows)
    ranked = sorted(rows, key=lambda r: (hamming_either(r[1], fp), r[0]))
    return [i for i, _ in ranked[:SHARED_SENTENCE_CAP]]
