"""The one character class (letters, digits, combining marks) against its definition."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_pg.text import charclass
from simhash_pg.text.charclass import HAN, MARK_PLANES, alnum_only, mark_ranges, word_pattern


def _kept(ch: str) -> bool:
    """The definition: Python's letters and digits (what \\w has but "_"), and every mark."""
    return ch.isalnum() or unicodedata.category(ch)[0] == "M"


# Letters, digits and marks from several scripts, punctuation, "_", spaces,
# variation selectors (plane 14) and characters outside the BMP.
_chars = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from("aZ9_ -,。नमस्तेกี่é\u0301\u20dd\ufe0f\U000e0100\U0001d7ce\U0001f600"),
)
# A list, not st.text(alphabet=...): that merges the alphabets into one range
# and would almost never draw the sampled characters.
texts = st.lists(_chars, max_size=60).map("".join)


def test_marks_only_in_the_planes_scanned() -> None:
    assert mark_ranges(((0, sys.maxunicode + 1),)) == mark_ranges(MARK_PLANES)


def test_every_mark_joins_a_word_and_survives_stripping() -> None:
    marks = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c))[0] == "M"]
    word = word_pattern("not ascii: é")
    assert all(word.fullmatch("a" + m) for m in marks)
    assert alnum_only("".join(marks)) == "".join(marks)
    assert alnum_only("हिन्दी, naïve") == "हिन्दीnaïve"


@settings(max_examples=300)
@given(texts)
def test_alnum_only_keeps_exactly_letters_digits_and_marks(text: str) -> None:
    assert alnum_only(text) == "".join(ch for ch in text if _kept(ch))


@settings(max_examples=300)
@given(texts)
def test_word_tokens_are_the_maximal_runs_of_word_characters(text: str) -> None:
    expected: list[str] = []
    run = ""
    for ch in text:
        if _kept(ch) or ch == "_":
            run += ch
        elif run:
            expected.append(run)
            run = ""
    if run:
        expected.append(run)
    assert word_pattern(text).findall(text) == expected


def test_huge_texts_are_stripped_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "ab_c, é\u0301 中文！" * 50
    whole = alnum_only(text)
    # cut inside words and between a letter and its mark
    monkeypatch.setattr(charclass, "_PIECE", 7)
    assert alnum_only(text) == whole == "".join(ch for ch in text if _kept(ch))


def test_han_is_every_cjk_ideograph_and_nothing_else_assigned() -> None:
    """HAN (the one definition of a Chinese character) holds every code point
    the Unicode database names a CJK unified or compatibility ideograph, and
    no other assigned one (unassigned code points in its ranges may come)."""
    ideograph = ("CJK UNIFIED IDEOGRAPH-", "CJK COMPATIBILITY IDEOGRAPH-")
    missing: list[str] = []
    extra: list[str] = []
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        name = unicodedata.name(ch, "")
        is_han = HAN.match(ch) is not None
        if name.startswith(ideograph) and not is_han:
            missing.append(hex(cp))
        elif is_han and name and not name.startswith(ideograph):
            extra.append(hex(cp))
    assert (missing[:5], extra[:5]) == ([], [])
