"""The n-longest-sentences signature: golden values and what it must ignore."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_pg.bits import to_signed, to_unsigned
from simhash_pg.text.signatures import (
    MIN_SIGNATURE_CHARS,
    longest_sentences,
    sentence_signature,
    sentence_signature_signed,
    split_sentences,
)

EN = (
    "The river rose quickly after three days of rain. Farmers moved their animals to "
    "higher fields before the bridge closed. Engineers said the old levee would hold for "
    "another week at most. Schools stayed open."
)
ZH = (
    "连续三天的降雨让河水迅速上涨。农民们在桥梁封闭之前把牲畜转移到了更高的田地里。"
    "工程师表示旧堤坝最多还能再坚持一个星期。学校照常上课。"
)


def test_golden_values() -> None:
    # Part of the stored format (SIGNATURE_VERSION 1): these must never change.
    assert sentence_signature(EN) == 13023022851244718991
    assert sentence_signature(ZH) == 5937275734606136694
    assert sentence_signature_signed(EN) == -5423721222464832625
    assert to_unsigned(sentence_signature_signed(EN) or 0) == sentence_signature(EN)


def test_longest_sentences_are_the_content_sentences() -> None:
    assert longest_sentences(ZH) == [
        "农民们在桥梁封闭之前把牲畜转移到了更高的田地里",
        "工程师表示旧堤坝最多还能再坚持一个星期",
        "连续三天的降雨让河水迅速上涨",
    ]
    assert "schoolsstayedopen" not in longest_sentences(EN)


def test_split_sentences_zh_and_en() -> None:
    # Input is normalised text: NFKC has made ！？ ASCII already.
    assert split_sentences("一。二!三?四;五") == ["一。", "二!", "三?", "四;", "五"]
    assert split_sentences("pi is 3.14 today. next one! last") == [
        "pi is 3.14 today.",
        "next one!",
        "last",
    ]


def test_paragraph_order_does_not_matter() -> None:
    sentences = EN.split(". ")
    reordered = ". ".join(reversed([s.rstrip(".") for s in sentences])) + "."
    assert sentence_signature(reordered) == sentence_signature(EN)


def test_boilerplate_and_formatting_do_not_matter() -> None:
    with_boilerplate = "Share this article. " + EN + " Copyright 2005 Example Ltd."
    assert sentence_signature(with_boilerplate) == sentence_signature(EN)
    zh_boilerplate = "来源：新浪网。" + ZH + "责任编辑：王伟。"
    assert sentence_signature(zh_boilerplate) == sentence_signature(ZH)
    # Full-width punctuation, one sentence per line, upper case, extra spaces.
    formatted = EN.upper().replace(". ", ".\n\n   ")
    assert sentence_signature(formatted) == sentence_signature(EN)
    assert sentence_signature(ZH.replace("。", "。\n")) == sentence_signature(ZH)


def test_an_edit_in_a_long_sentence_changes_it() -> None:
    edited = EN.replace("Engineers said", "Engineers claimed")
    assert sentence_signature(edited) != sentence_signature(EN)
    # ...while an edit in a short sentence does not.
    assert sentence_signature(EN.replace("Schools stayed open", "Shops closed")) == (
        sentence_signature(EN)
    )


def test_too_little_text_has_no_signature() -> None:
    assert sentence_signature("Short. Lines. Only.") is None
    assert sentence_signature("") is None
    assert sentence_signature_signed("") is None
    assert sentence_signature("x" * MIN_SIGNATURE_CHARS) is not None


def test_n_must_be_positive() -> None:
    with pytest.raises(ValueError):
        longest_sentences(EN, 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcdefghij ", min_size=5, max_size=40), min_size=1, max_size=8))
def test_signature_is_a_signed_bigint_and_order_blind(sentences: list[str]) -> None:
    text = ". ".join(sentences) + "."
    sig = sentence_signature(text)
    if sig is None:
        return
    assert 0 <= sig < 2**64
    assert sentence_signature_signed(text) == to_signed(sig)
    # Order of distinct sentences never matters when they all are chosen.
    if len({s.strip() for s in sentences}) <= 3:
        assert sentence_signature(". ".join(reversed(sentences)) + ".") == sig


def _longest_by_definition(norm: str, n: int) -> list[str]:
    """Step 3-4 of the module's definition, every sentence reduced."""
    from simhash_pg.text.charclass import alnum_only
    from simhash_pg.text.signatures import split_sentences

    reduced = {s for s in (alnum_only(p) for p in split_sentences(norm)) if s}
    return sorted(sorted(reduced, key=lambda s: (-len(s), s))[:n])


# sentences of letters, punctuation and spaces, so that reduction shortens
# them by different amounts, and repeats, so that equal sentences meet
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab,- .!;。x1", max_size=30), max_size=12),
       st.integers(1, 5))
def test_the_n_longest_are_those_of_the_definition(parts: list[str], n: int) -> None:
    from simhash_pg.text.signatures import _longest

    norm = " ".join(parts)
    assert _longest(norm, n) == _longest_by_definition(norm, n)
