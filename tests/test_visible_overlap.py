"""Visible text (the default scheme's markup stripping) and the labelling rule's overlap."""

from __future__ import annotations

import html
import re
from html.entities import html5

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_pg.text.normalize import normalize, normalize_visible
from simhash_pg.text.signatures import sentence_signature
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.text.visible import HTML_ELEMENTS, strip_markup
from simhash_pg.verify import TEXT_RULES, alnum_only, shingles
from simhash_pg.verify.jaccard import verification_text
from simhash_pg.verify.overlap import overlap, overlap_many

RULE_2 = TEXT_RULES[2]  # the labelling rule's overlap: what is_duplicate decides

# ------------------------------------------------------------------ strip_markup


@pytest.mark.parametrize(
    ("raw", "visible"),
    [
        ('<p class="art_p" style="text-indent:2em;">北京&nbsp;今天</p>', " 北京\xa0今天 "),
        ("<div><!-- publish_helper name='x' --><br/>A&amp;B</div>", "   A&B "),
        ("&#x4e2d;&#22269;&ldquo;x&rdquo;", "中国“x”"),
        ('<a href="http://news.sina.com.cn/c/1.shtml" target="_blank">链接</a>', " 链接 "),
        ("<?xml version='1.0'?><!DOCTYPE html>x", "  x"),
        ("<! not a tag <p>y</p>", "<! not a tag  y "),  # no '<' inside a tag
    ],
)
def test_markup_goes_entities_decode(raw: str, visible: str) -> None:
    assert strip_markup(raw) == visible


@pytest.mark.parametrize(
    "plain",
    [
        "x <y and more",  # no closing '>': not a tag
        "a < b > c",  # '<' not followed by a name
        "if 3<4 and 5>4 then",  # '<' before a digit
        "AT&T shares rose 3% <- note",
        "中文里的《书名》和〈篇名〉",
        "email <> nobody",
        "if a<b and c>d then",  # looks like <b ...>, but no attribute has a value
        "List<String> names = new ArrayList<>(); Optional<T> x; Map<K, V> m",
        "#include <stdio.h> and <vector>",
        "AT&T, R&D, this&nothing, &nbsp without its semicolon, &notanentity; &#;",
        "<td nowrap> <input disabled>",  # bare attributes only: kept as text
        "中文里的<奇妙的食光>和《书名》",  # the eval's zh articles use ASCII < > as quotes
    ],
)
def test_plain_text_is_left_alone(plain: str) -> None:
    assert strip_markup(plain) == plain


plain_texts = st.text(alphabet=st.characters(blacklist_characters="<&"), max_size=200)

# Code and math: identifiers that are no HTML element and no entity name,
# numbers and operators with '<', '>' and '&', with or without spaces.
_idents = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,7}", fullmatch=True).filter(
    lambda w: w.lower() not in HTML_ELEMENTS and f"{w};" not in html5)
_tokens = st.one_of(
    _idents, st.from_regex(r"[0-9]{1,4}", fullmatch=True),
    st.builds("{}<{}>".format, _idents, _idents),  # generics: List<String>
    st.builds("{}<{} {} {}>{}".format, _idents, _idents, _idents, _idents, _idents),  # a<b or c>d
    st.builds("&{};".format, _idents),  # not an entity name
    st.sampled_from(
    ["<", ">", "<=", ">=", "<<", ">>", "&&", "&", "->", "=", "==", "!=", "(", ")", ";", ",",
     "<>", "{", "}", "[", "]", "/", "+", "-", " < ", " > ", " & "]))
code_texts = st.lists(st.tuples(_tokens, st.sampled_from(["", " ", "\n"])), max_size=40).map(
    lambda ts: "".join(t + sep for t, sep in ts))


@settings(max_examples=200, deadline=None)
@given(plain_texts)
def test_text_without_markup_characters_is_unchanged(text: str) -> None:
    assert strip_markup(text) == text
    assert normalize_visible(text, ignorables=False) == normalize(text, t2s=True)


@settings(max_examples=300, deadline=None)
@given(code_texts)
def test_code_and_math_are_left_alone(text: str) -> None:
    # '<' and '&' in code or math never start markup: the text, and with it its
    # fingerprint under the default scheme, is what version 1 made of it.
    assert strip_markup(text) == text
    v1, v2 = Fingerprinter("auto:version=1"), Fingerprinter("auto:version=2")
    assert v2.normalize(text) == v1.normalize(text)


@settings(max_examples=200, deadline=None)
@given(plain_texts)
def test_plain_text_fingerprints_as_under_version_1(text: str) -> None:
    v1, v2 = Fingerprinter("auto:version=1"), Fingerprinter("auto:version=2")
    assert v2.normalize(text) == v1.normalize(text)
    assert v2.fingerprint_or_none(text) == v1.fingerprint_or_none(text)
    assert sentence_signature(text) == sentence_signature(text, visible=False)
    assert verification_text(text) == verification_text(text, visible=False)


@settings(max_examples=200, deadline=None)
@given(plain_texts, st.lists(st.sampled_from(
    ['<p class="x">', "</p>", "<br/>", "<span style=\"color:#333\">", "</span>", "&nbsp;",
     "<!-- c -->", '<img src="a.jpg" alt="">']), max_size=6), st.randoms())
def test_markup_inserted_between_words_leaves_the_letters(
    text: str, tags: list[str], rnd: object
) -> None:
    # Inserting well-formed tags or &nbsp; at space positions never changes the
    # letters and digits of the visible text (what fingerprints and verification read).
    words = text.split(" ")
    for tag in tags:
        words.insert(rnd.randrange(len(words) + 1), tag)  # type: ignore[attr-defined]
    marked = " ".join(words)
    assert alnum_only(normalize_visible(marked)) == alnum_only(normalize_visible(text))


@settings(max_examples=300, deadline=None)
@given(plain_texts, st.lists(st.sampled_from(
    ['<p class="x">', "</p>", "<br/>", "<span style=\"color:#333\">", "&nbsp;", "&ldquo;",
     "&#20013;", "<!-- c -->"]), max_size=6), st.integers(1, 2), st.randoms())
def test_version_3_sees_through_markup_escaped_again(
    text: str, tags: list[str], times: int, rnd: object
) -> None:
    # A marked-up text escaped once or twice more (a page encoded twice or
    # three times) has the features, and so the fingerprint, of the marked-up
    # text under version 3; version 2 sees the escaped markup as letters.
    words = text.split(" ")
    for tag in tags:
        words.insert(rnd.randrange(len(words) + 1), tag)  # type: ignore[attr-defined]
    marked = escaped = " ".join(words)
    for _ in range(times):
        escaped = html.escape(escaped, quote=False)
    v3 = Fingerprinter("auto:version=3")
    assert alnum_only(v3.feature_text(escaped)) == alnum_only(v3.feature_text(marked))
    assert v3.fingerprint_or_none(escaped) == v3.fingerprint_or_none(marked)
    # verification still reads what the labelling rule reads: one decoding
    assert v3.normalize(escaped) == Fingerprinter("auto:version=2").normalize(escaped)


@settings(max_examples=300, deadline=None)
@given(code_texts)
def test_code_and_math_fingerprint_as_under_version_2(text: str) -> None:
    # '<' and '&' of code or math are no markup at any depth.
    v3 = Fingerprinter("auto:version=3")
    assert v3.fingerprint_or_none(text) == Fingerprinter("auto:version=2").fingerprint_or_none(text)


def test_the_labelling_rules_tags_are_a_superset() -> None:
    # Everything strip_markup removes, the eval's rule removes too.
    rule = re.compile(r"<[^<>]{0,300}>")
    for raw in ('<p class="a">x</p>', "<!-- c -->", "<br/>", "<?php x ?>"):
        assert html.unescape(rule.sub(" ", raw)) == strip_markup(raw)


def test_strip_markup_refuses_bytes() -> None:
    with pytest.raises(TypeError, match="decode"):
        strip_markup(b"<p>x</p>")  # type: ignore[arg-type]


# ------------------------------------------------------------------ overlap


def reference(a: str, b: str, n: int) -> float:
    """The labelling rule's overlap, written as the eval README states it."""
    def grams(s: str) -> set[str]:
        return {s} if len(s) <= n else {s[i : i + n] for i in range(len(s) - n + 1)}

    if not a or not b:
        return 0.0
    ga, gb = grams(a), grams(b)
    return len(ga & gb) / max(len(ga), len(gb))


# small alphabets make many shared n-grams; CJK ones need the wide packing
alphabets = st.sampled_from(["ab", "abc ", "的一是在不了有和人这中大为上个国", "xyzé\u03011"])


@settings(max_examples=300, deadline=None)
@given(alphabets.flatmap(lambda al: st.tuples(st.text(al, max_size=80),
                                              st.text(al, max_size=80))),
       st.integers(1, 6))
def test_overlap_equals_the_rule(ab: tuple[str, str], n: int) -> None:
    a, b = ab
    expected = 1.0 if a == b and a else reference(a, b, n)
    assert overlap(a, b, n) == pytest.approx(expected, abs=0, rel=0)
    assert overlap(a, b, n) == overlap(b, a, n)


def test_overlap_with_a_huge_alphabet() -> None:
    # 5,000 distinct characters need 13 bits each: 5-grams no longer fit in
    # 63 bits, and packing anyway would wrap id 4096 onto id 0.
    a = "".join(chr(0x4E00 + i) for i in range(5000))
    b = chr(0x4E00 + 4096) + a[1:5]
    assert overlap(a, b, 5) == reference(a, b, 5) == 0.0
    assert overlap(a, a[:4000] + b, 5) == reference(a, a[:4000] + b, 5)


@st.composite
def query_and_candidates(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A query and candidates: edited copies of it (shared n-grams), other texts, short ones."""
    al = draw(alphabets)
    query = draw(st.text(al, min_size=0, max_size=220))
    cands: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        if query and draw(st.booleans()):
            i, j = sorted(draw(st.integers(0, len(query))) for _ in range(2))
            cands.append(query[:i] + draw(st.text(al, max_size=30)) + query[j:])
        else:
            cands.append(draw(st.text(al, max_size=220)))
    return query, cands


@settings(max_examples=300, deadline=None)
@given(query_and_candidates())
def test_overlap_many_equals_the_rule_pair_by_pair(qc: tuple[str, list[str]]) -> None:
    query, cands = qc
    got = overlap_many(query, cands)
    assert got == [overlap(query, c) for c in cands]
    assert got == [1.0 if c == query and c else reference(query, c, RULE_2.ngram(query, c))
                   for c in cands]


def test_overlap_many_with_a_huge_alphabet_and_many_candidates() -> None:
    # codes that do not fit beside a segment number fall back pair by pair
    a = "".join(chr(0x4E00 + i) for i in range(3000))
    cands = [a[i : i + 2500] for i in range(0, 400, 10)] + [a[::-1], a[:100]]
    assert overlap_many(a, cands) == [reference(a, c, 5) for c in cands]
    latin = "the quick brown fox jumps over the lazy dog " * 4
    many = [latin[i:] + latin[:i] for i in range(70)]  # 7 bits of segment numbers
    assert overlap_many(latin, many) == [reference(latin, c, 5) for c in many]


def test_ngram_and_threshold_follow_the_length() -> None:
    short, long_ = "x" * 49, "y" * 50
    assert RULE_2.ngram(short, long_) == 2
    assert RULE_2.ngram(long_, long_ + "z") == 5
    base = "".join(chr(0x4E00 + (i * 7) % 500) for i in range(400))
    cut70 = base[:280]
    assert not RULE_2.is_duplicate(base, cut70)  # 5-gram overlap 0.7
    assert RULE_2.is_duplicate(base, base[:360])  # 0.9
    assert overlap("", "x") == 0.0
    assert overlap("abc", "abc") == 1.0
    assert len(shingles(base, 5)) == 396
