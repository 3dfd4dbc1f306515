"""Short-text verification: known pairs, properties, thresholds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_pg import verify as V

text = st.text(alphabet="abcdefghij一二三四五 ,.", max_size=60)


def test_verification_text_keeps_letters_digits_marks_only() -> None:
    assert V.verification_text("Ｈｅｌｌｏ，  World! 2024") == "helloworld2024"
    assert V.verification_text("北京：今天 晴。") == "北京今天晴"
    # Traditional folds to simplified, so a script conversion is the same text.
    assert V.verification_text("漢語") == V.verification_text("汉语")
    # Combining marks stay (Devanagari vowel signs), underscores go.
    assert V.verification_text("नमस्ते_x") == "नमस्तेx"
    assert V.verification_text("<b>a</b>", html=True) == "a"


def test_known_pairs() -> None:
    a = V.verification_text("Stocks rally as oil prices fall")
    # Punctuation, case and spacing: identical after normalisation.
    assert V.verify(a, V.verification_text("STOCKS rally, as oil-prices fall!")) == 1.0
    # One word changed in a title: still a near-duplicate.
    one_word = V.verification_text("Stocks rally as oil prices drop")
    assert V.verify(a, one_word) == pytest.approx(21 / 27)  # 21 shared of 27 bigrams
    assert V.is_near_duplicate(a, one_word)
    # Bigram Jaccard by hand: "abcd" vs "abce": {ab,bc,cd} vs {ab,bc,ce} -> 2/4.
    assert V.similarity("abcd", "abce") == pytest.approx(0.5)
    # Trigram Jaccard when both sides are long.
    long_a, long_b = "x" * 60 + "abcd", "x" * 60 + "abce"
    assert V.ngram_for(long_a, long_b) == 3
    sa, sb = V.shingles(long_a, 3), V.shingles(long_b, 3)
    assert V.similarity(long_a, long_b) == pytest.approx(len(sa & sb) / len(sa | sb))
    # Unrelated titles.
    assert not V.is_near_duplicate(a, V.verification_text("Election results in Ohio"))


def test_site_suffix_crosses_the_threshold() -> None:
    a = V.verification_text("Stocks rally as oil falls")
    b = V.verification_text("Stocks rally as oil falls - BBC News")
    assert V.verify(a, b) == pytest.approx(0.72)
    assert V.is_near_duplicate(a, b)
    assert not V.is_near_duplicate(a, b, threshold=0.73)


def test_short_and_thresholds() -> None:
    short, long_ = "a" * (V.SHORT_TEXT_CHARS - 1), "b" * V.SHORT_TEXT_CHARS
    assert V.is_short(short) and not V.is_short(long_)
    assert V.threshold_for(short, long_) == V.SHORT_THRESHOLD
    assert V.threshold_for(long_, long_) == V.LONG_THRESHOLD
    assert V.ngram_for(long_, short) == V.SHORT_NGRAM
    assert V.SHORT_K >= 3 and V.LONG_K >= 3
    assert V.KEEP_TEXT_CHARS >= V.SHORT_TEXT_CHARS


def test_empty_and_tiny_texts() -> None:
    assert V.similarity("", "") == 1.0
    assert V.similarity("", "abc") == 0.0
    assert V.shingles("a", 2) == frozenset({"a"})
    assert V.shingles("", 2) == frozenset()
    with pytest.raises(ValueError):
        V.shingles("abc", 0)


@settings(max_examples=200, deadline=None)
@given(text, text)
def test_symmetric_and_bounded(a: str, b: str) -> None:
    na, nb = V.verification_text(a), V.verification_text(b)
    s = V.verify(na, nb)
    assert 0.0 <= s <= 1.0
    assert s == V.verify(nb, na)
    assert V.is_near_duplicate(na, nb) == V.is_near_duplicate(nb, na)


@settings(max_examples=100, deadline=None)
@given(text)
def test_identity_is_one(a: str) -> None:
    na = V.verification_text(a)
    assert V.verify(na, na) == 1.0
    assert V.is_near_duplicate(na, na)


@settings(max_examples=100, deadline=None)
@given(text, text, st.floats(0.0, 1.0))
def test_threshold_is_monotone(a: str, b: str, t: float) -> None:
    na, nb = V.verification_text(a), V.verification_text(b)
    s = V.verify(na, nb)
    assert V.is_near_duplicate(na, nb, threshold=t) == (s >= t)
    assert V.is_near_duplicate(na, nb, threshold=0.0)


# --------------------------------------------------------------------------
# the store policy


def test_keep_text_and_query_k() -> None:
    short, mid, long_ = "a" * 10, "b" * (V.KEEP_TEXT_CHARS - 1), "c" * V.KEEP_TEXT_CHARS
    assert V.keep_text(short) and V.keep_text(mid) and not V.keep_text(long_)
    assert V.keep_text(long_, "all") and not V.keep_text(short, "off")
    assert V.query_k(short, 3) == V.SHORT_K and V.query_k(mid, 3) == V.SHORT_K
    assert V.query_k(long_, 3) == 3 and V.query_k(long_, 3, "all") == V.LONG_K
    assert V.query_k(short, 3, "off") == 3 and V.query_k(short, 20) == 20
    with pytest.raises(ValueError):
        V.query_k(short, 3, "sometimes")  # type: ignore[arg-type]


def test_accept_rules() -> None:
    title = V.verification_text("Stocks rally as oil prices fall")
    same = V.verification_text("Stocks rally, as oil prices fall!")
    other = V.verification_text("Election results expected in Ohio")
    assert V.accept(title, same, V.SHORT_K, 3)  # wide k, verified
    assert not V.accept(title, same, V.SHORT_K + 1, 3)
    assert not V.accept(title, other, 0, 3)  # close fingerprints, different text
    assert V.accept(title, other, 0, 3, "off")
    assert not V.accept(title, None, 0, 3)  # a short query against an unkept long text
    long_a = "".join(chr(0x4E00 + i) for i in range(100))  # 98 distinct trigrams
    long_b = long_a[:-3] + "xyz"
    assert V.accept(long_a, None, 3, 3) and not V.accept(long_a, None, 4, 3)
    assert V.accept(long_a, long_b, 3, 3, "short")
    assert not V.accept(long_a, long_b, V.LONG_K, 3, "short")
    assert V.accept(long_a, long_b, V.LONG_K, 3, "all")
    assert not V.accept(long_a, long_b, V.LONG_K + 1, 3, "all")
    assert V.accept(long_a, long_b, 40, 3, "all", signature_match=True)
    assert not V.accept(long_a, long_b, 40, 3, "short", signature_match=True)
    assert not V.accept(long_a, "z" * 100, 0, 3, "all")  # verification vetoes


@settings(max_examples=150, deadline=None)
@given(text, text, st.integers(0, 20), st.booleans(), st.sampled_from(["short", "all"]))
def test_eval_rule_is_the_store_rule(a: str, b: str, d: int, sig: bool, mode: str) -> None:
    """quality.decide (vectorised, used by eval) agrees with accept (used by the store)."""
    import numpy as np

    from lab import quality as Q

    na, nb = V.verification_text(a * 3), V.verification_text(b * 3)
    rule = Q.Rule(k=3, long_verify=mode == "all", sentences=mode == "all")
    short = np.array([V.is_short(na) or V.is_short(nb)])
    got = Q.decide(rule, np.array([d]), np.array([V.verify(na, nb)]), short, np.array([sig]))
    assert bool(got[0]) == V.accept(na, nb, d, 3, mode, signature_match=sig)  # type: ignore[arg-type]


def test_filter_candidates_keeps_verified_nearest_first() -> None:
    q = V.verification_text("Stocks rally as oil prices fall")
    cands = [
        ("far-but-same", 9, V.verification_text("stocks rally as oil prices fall!"), False),
        ("near-but-different", 1, V.verification_text("Election results in Ohio"), False),
        ("same", 2, q, False),
        ("too-far", V.SHORT_K + 1, q, False),
        ("no-text", 0, None, False),
    ]
    assert V.filter_candidates(q, cands, 3) == [("same", 2), ("far-but-same", 9)]
    assert [p for p, _ in V.filter_candidates(q, cands, 3, "off")] == [
        "no-text",
        "near-but-different",
        "same",
    ]
    assert V.filter_candidates(q, [], 3) == []


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab一二\U0001f600\u0301", max_size=30),
    st.text(alphabet="ab一二\U0001f600\u0301", max_size=30),
    st.integers(1, 5),
)
def test_fast_jaccard_equals_set_jaccard(a: str, b: str, n: int) -> None:
    sa, sb = V.shingles(a, n), V.shingles(b, n)
    if a == b:
        expected = 1.0
    elif not sa or not sb:
        expected = 0.0
    else:
        expected = len(sa & sb) / len(sa | sb)
    assert V.similarity(a, b, n) == pytest.approx(expected)
