"""Letters, digits and combining marks: the one character class of the package.

Python's ``\\w`` is almost "letters and digits" but not quite: it lets ``_``
in and leaves the combining marks (Unicode categories Mn, Mc, Me) out, which
would cut Devanagari, Thai or decomposed Latin words apart. Three things are
built on the corrected class, so it is defined here once:

- the tokens of the ``words`` scheme: runs of ``\\w`` and marks;
- what the ``chars`` and ``auto`` schemes shingle, and the *verification
  text* (:mod:`simhash_pg.verify`) and sentence signature compare: the text
  with everything but letters, digits and marks removed (:func:`alnum_only`).

Both are part of fingerprint scheme version 1 and of stored verification
texts: changing the class changes fingerprints.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "HAN",
    "HAN_CLASS",
    "MARK_PLANES",
    "alnum_only",
    "has_alnum",
    "mark_class",
    "mark_ranges",
    "word_pattern",
]

# Where Unicode has combining marks: planes 0, 1 and 14 (variation selectors).
# Scanning only these builds the patterns in well under 0.1 s instead of
# ~0.5 s; a test checks that the whole code space has no mark outside them.
MARK_PLANES = ((0, 0x20000), (0xE0000, 0xF0000))

# Chinese characters, the one definition: the CJK Unified Ideographs (U+4E00),
# extension A (U+3400), the compatibility ideographs (U+F900) and planes 2 and
# 3, which Unicode gives to ideographs alone (extensions B to J and the
# compatibility supplement, U+20000 to U+3347F as of Unicode 17, and what it
# adds there). What is cut into words by jieba rather than at spaces, and what
# makes normalize() convert traditional to simplified; tests/test_charclass.py
# checks it against the Unicode database.
HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
HAN = re.compile(f"[{HAN_CLASS}]")
_ASCII_WORD = re.compile(r"\w+")
_ALNUM_RUN = re.compile(r"[^\W_]+")  # letters and digits; in ASCII (no marks) the whole class
# Huge texts are stripped in pieces, which keeps the list of matches small.
_PIECE = 1 << 20


def mark_ranges(spans: tuple[tuple[int, int], ...] = MARK_PLANES) -> list[tuple[int, int]]:
    """Inclusive code point ranges of general category M* within ``spans`` ([lo, hi))."""
    out: list[tuple[int, int]] = []
    for lo, hi in spans:
        start = -1
        for cp in range(lo, hi + 1):
            is_mark = cp < hi and unicodedata.category(chr(cp))[0] == "M"
            if is_mark and start < 0:
                start = cp
            elif not is_mark and start >= 0:
                out.append((start, cp - 1))
                start = -1
    return out


@lru_cache(maxsize=1)
def mark_class() -> str:
    """A regex character-class body matching every combining mark."""
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in mark_ranges()
    )


@lru_cache(maxsize=1)
def _word_re() -> re.Pattern[str]:
    return re.compile(rf"[\w{mark_class()}]+")


@lru_cache(maxsize=1)
def _alnum_mark_re() -> re.Pattern[str]:
    return re.compile(rf"[^\W_]+|[{mark_class()}]+")


def word_pattern(text: str) -> re.Pattern[str]:
    """The pattern whose matches are the word tokens of ``text``: runs of ``\\w`` and marks."""
    return _ASCII_WORD if text.isascii() else _word_re()


def alnum_only(text: str) -> str:
    """``text`` with everything but letters, digits and combining marks removed."""
    # The ASCII class is 2-4x faster, and findall-and-join beats re.sub here.
    findall = (_ALNUM_RUN if text.isascii() else _alnum_mark_re()).findall
    if len(text) <= _PIECE:
        return "".join(findall(text))
    # Any cut is safe: the class is decided one character at a time.
    return "".join(
        ["".join(findall(text[i : i + _PIECE])) for i in range(0, len(text), _PIECE)]
    )


def has_alnum(text: str) -> bool:
    """Whether ``text`` has a letter or digit (marks alone do not count)."""
    return _ALNUM_RUN.search(text) is not None


def warm_up() -> None:
    """Build the patterns now (e.g. before forking workers)."""
    _word_re()
    _alnum_mark_re()
