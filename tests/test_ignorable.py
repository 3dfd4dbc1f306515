"""Invisible characters cannot evade dedup (issue 29, item 3): scheme version 4.

Unicode's Default_Ignorable_Code_Points (variation selectors, the combining
grapheme joiner, the Hangul fillers, ...) render as nothing. Under version 4
a text with any of them inserted anywhere fingerprints, and verifies,
exactly as the text without them; under version 3 (older stores) the
issue's attack moves the fingerprint.
"""

from __future__ import annotations

import shutil
import subprocess
import unicodedata

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg.store import SimhashStore
from simhash_pg.text.normalize import IGNORABLE
from simhash_pg.text.schemes import Scheme
from simhash_pg.text.signatures import sentence_signature
from simhash_pg.text.simhash import Fingerprinter, NoFeaturesError
from simhash_pg.verify.jaccard import verification_text

IGNORABLES = [chr(c) for c in range(0x110000)
              if not 0xD800 <= c <= 0xDFFF and IGNORABLE.fullmatch(chr(c))]
# named in the issue: U+FE0F, U+FE00, U+034F, U+180B, U+17B4 and the fillers
ATTACK = ["\ufe0f", "\ufe00", "\u034f", "\u180b", "\u17b4", "\u115f", "\u1160", "\u3164",
          "\uffa0"]
ARTICLE = ("The community pool will be closed for maintenance from Monday to Wednesday. "
           "Swimming lessons move to the school gym; members keep their usual time slots.")
# what the store compares: letters and accents, markup, entities, CJK, Hangul
_PIECES = ["a", "b", "z", "é", "e\u0301", "ß", "Ｆ", "1", " ", "  ", "\n", ".", "。", "天",
           "氣", "한", "\u1100\u1161", "<p>", "</b>", "&amp;", "&shy;", "&#xFE0F;", "&lt;i&gt;",
           "\u200b", "x\u0308"]


def _insert(text: str, where: list[tuple[float, str]]) -> str:
    out = text
    for frac, ch in sorted(where, reverse=True):
        at = int(frac * len(out))
        out = out[:at] + ch + out[at:]
    return out


def _seen(fper: Fingerprinter, text: str) -> tuple[object, ...]:
    """Everything the store derives from a text: features, fingerprint, verification."""
    s = fper.scheme
    try:
        fp: int | None = fper.fingerprint(text)
    except NoFeaturesError:
        fp = None
    return (fper.normalize(text), fper.feature_text(text), fp,
            verification_text(text, html=s.html, t2s=s.t2s, visible=bool(s.visible)),
            sentence_signature(text, html=s.html, t2s=s.t2s, visible=bool(s.visible)))


_texts = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=40).map("".join),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=60),
)
_insertions = st.lists(st.tuples(st.floats(0, 1), st.sampled_from(IGNORABLES)),
                       min_size=1, max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts, where=_insertions,
       name=st.sampled_from(["auto", "words", "chars", "auto:visible=false", "auto:html=true"]))
def test_ignorables_anywhere_change_nothing_under_version_4(
    text: str, where: list[tuple[float, str]], name: str
) -> None:
    fper = Fingerprinter(name)
    assert fper.scheme.version == 4 and fper.scheme == Scheme.from_dict(fper.scheme.to_dict())
    assert _seen(fper, _insert(text, where)) == _seen(fper, text)


@pytest.mark.parametrize("ch", ATTACK)
def test_the_attack_moved_version_3_and_not_version_4(ch: str) -> None:
    attacked = "".join(c + ch if c.isalpha() else c for c in ARTICLE)
    v3, v4 = Fingerprinter("auto:version=3"), Fingerprinter()
    assert (v3.fingerprint(attacked) ^ v3.fingerprint(ARTICLE)).bit_count() > 10
    assert v4.fingerprint(attacked) == v4.fingerprint(ARTICLE)
    assert verification_text(attacked) == verification_text(ARTICLE)


def test_no_other_character_becomes_ignorable_under_nfkc_and_casefold() -> None:
    # why one pass before NFKC and one after the markup step are enough
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF or IGNORABLE.match(chr(c)):
            continue
        folded = unicodedata.normalize("NFKC", chr(c)).casefold()
        assert not (folded.isascii() is False and IGNORABLE.search(folded)), hex(c)


@pytest.mark.skipif(shutil.which("perl") is None, reason="no perl to compare with")
def test_the_set_is_unicodes_default_ignorable_code_point() -> None:
    got = subprocess.run(
        ["perl", "-e", "use Unicode::UCD; print Unicode::UCD::UnicodeVersion(), qq(\\n);"
         " for (0..0x10FFFF) { next if $_ >= 0xD800 && $_ <= 0xDFFF;"
         " print qq($_\\n) if chr($_) =~ /\\p{Default_Ignorable_Code_Point}/ }"],
        capture_output=True, text=True, check=True, timeout=120).stdout.split()
    if got[0] != unicodedata.unidata_version:
        pytest.skip(f"perl's Unicode {got[0]}, Python's {unicodedata.unidata_version}")
    assert [chr(int(c)) for c in got[1:]] == IGNORABLES
    assert {"\u115f", "\u1160", "\u3164", "\uffa0"} <= set(IGNORABLES)  # the fillers


@pytest.mark.parametrize(("scheme", "stored"), [(None, False), ("auto:version=3", True)])
def test_a_copy_with_invisible_marks_is_a_duplicate_in_a_new_store(
    pg: psycopg.Connection, pg_dsn: str, scheme: str | None, stored: bool
) -> None:
    attacked = "".join(c + "\ufe0f" if c.isalpha() else c for c in ARTICLE)
    with SimhashStore(pg_dsn, scheme=scheme) as store:
        first = store.add(ARTICLE, key="original")
        again = store.add(attacked, key="copy")
        assert first.inserted and again.inserted is stored
        if not stored:
            assert again.duplicate_of == first.id and again.distance == 0
        assert [m.key for m in store.near(attacked)] == (["copy"] if stored else ["original"])
    recorded = pg.execute("SELECT value FROM simhash_meta WHERE name = 'scheme'").fetchone()
    assert recorded is not None and recorded[0]["version"] == (3 if stored else 4)


@settings(max_examples=150, deadline=None)
@given(text=_texts)
def test_a_text_without_ignorables_fingerprints_as_under_version_3(text: str) -> None:
    # old stores keep version 3; the new version changes only texts holding one
    text = IGNORABLE.sub("", text).replace("&", " ")  # no entity of one either
    v3, v4 = Fingerprinter("auto:version=3"), Fingerprinter()
    assert v4.normalize(text) == v3.normalize(text)
    assert v4.feature_text(text) == v3.feature_text(text)
