"""Text normalisation, the first step of every fingerprint scheme.

The rules, in order (each one is part of the scheme's definition, so changing
any of them needs a new scheme version):

1. Input must be a ``str``; anything else is a :class:`TypeError`.
   Optional (``ignorables=True``, scheme version 4 on): every Unicode
   Default_Ignorable_Code_Point (:data:`IGNORABLE`, the Hangul fillers
   among them) is removed, here, before markup and NFKC see the text, and
   again after the markup step (an entity such as ``&shy;`` decodes to one).
2. Lone surrogates (code points U+D800..U+DFFF that do not form a pair, e.g.
   from ``surrogateescape`` decoding) become U+FFFD, which no scheme treats as
   part of a word, so they are dropped. A *paired* surrogate written as two
   code units is joined into the character it encodes.
3. NUL and the other C0/C1 control characters count as white space.
4. Optional (``html=True``): markup is removed with selectolax, entities are
   decoded, ``<script>``/``<style>`` content is dropped, and block elements
   separate words. Else optional (``visible=True``, the default scheme's since
   version 2): well-formed tags become a space and entities are decoded
   (:func:`simhash_pg.text.visible.strip_markup`), nothing else. With
   ``deep=True`` (scheme version 3's features, never verification), markup
   that this reveals is removed too (:func:`simhash_pg.text.visible.strip_markup_deep`).
5. Unicode NFKC (full-width letters, digits and punctuation become their
   ordinary forms, ligatures and compatibility ideographs are unfolded), then
   ``str.casefold`` (stronger than ``lower``: ß -> ss).
6. Optional (``t2s=True``): traditional Chinese characters are folded to
   simplified ones with OpenCC's ``t2s`` table.
7. Runs of white space collapse to one space; leading and trailing space goes.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import Any

from simhash_pg.text.charclass import HAN
from simhash_pg.text.strs import ensure_str
from simhash_pg.text.visible import strip_markup, strip_markup_deep

__all__ = [
    "IGNORABLE", "ensure_str", "fix_surrogates", "normalize", "normalize_visible", "strip_html",
    "to_simplified", "written",
]

# Unicode's Default_Ignorable_Code_Point set (DerivedCoreProperties.txt,
# Unicode 14.0, the version of this Python's unicodedata; the same ranges as
# Perl's \p{Default_Ignorable_Code_Point}): characters that render as nothing
# unless a font has special support. Among them the variation selectors
# (U+FE00-FE0F, U+E0100-E01EF), the combining grapheme joiner U+034F, the
# Mongolian free variation selectors, Khmer U+17B4-17B5, and the Hangul
# fillers U+115F, U+1160, U+3164, U+FFA0 (letters, Lo): inserted after each
# letter they moved a fingerprint 31-36 bits (issue 29). No other character
# becomes one under NFKC or casefold (tests/test_ignorable.py checks).
IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]+"
)

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0/C1 control characters that \s does not already cover.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]+")
# White space that is not already a single " ". Matching only these keeps the
# substitution cheap (most text has few) and memory flat for huge texts.
_WS_RUN = re.compile(r"\s{2,}|[^\S ]")

_opencc_lock = threading.Lock()
_opencc: Any = None


def fix_surrogates(text: str) -> str:
    """Rule 2: lone surrogates become U+FFFD, paired ones the character they encode.

    Also the rule by which ``dedup`` writes texts to its output files.
    """
    if _SURROGATE.search(text) is None:
        return text
    # UTF-16 with surrogatepass joins valid pairs; "replace" turns the lone
    # ones into U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def strip_html(text: str) -> str:
    """Visible text of an HTML fragment or page, entities decoded."""
    if "<" not in text and "&" not in text:
        return text
    # lexbor: the maintained HTML5 parser in selectolax (the older backend is gone).
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(text)
    for node in tree.css("script, style, noscript, template"):
        node.decompose()
    root = tree.body if tree.body is not None else tree.root
    if root is None:
        return ""
    # separator=" " keeps words from adjacent block elements apart.
    return root.text(deep=True, separator=" ", strip=False)


def to_simplified(text: str) -> str:
    """Traditional Chinese to simplified (OpenCC's t2s, loaded on first use)."""
    global _opencc
    if _opencc is None:
        with _opencc_lock:
            if _opencc is None:
                import opencc

                _opencc = opencc.OpenCC("t2s")
    return str(_opencc.convert(text))


def _drop_ignorable(text: str) -> str:
    return text if text.isascii() else IGNORABLE.sub("", text)


def normalize(
    text: str, *, html: bool = False, t2s: bool = False, visible: bool = False,
    deep: bool = False, ignorables: bool = False,
) -> str:
    """Normalise ``text`` by the rules in this module's docstring."""
    text = ensure_str(text)
    if ignorables:
        # first: one between two halves of a surrogate pair, inside a tag or an
        # entity, or between a letter and its accent must change nothing
        text = _drop_ignorable(text)
    text = fix_surrogates(text)
    if "\x00" in text:
        # Early, because C libraries below (OpenCC, lexbor) may stop at a NUL.
        text = text.replace("\x00", " ")
    if html:
        text = strip_html(text)
    elif visible:
        text = strip_markup_deep(text) if deep else strip_markup(text)
    if ignorables and (html or visible):
        text = _drop_ignorable(text)  # entities such as &shy; decode to them
    text = unicodedata.normalize("NFKC", text).casefold()
    if t2s and _has_han(text):
        text = to_simplified(text)
    if _CONTROL.search(text) is not None:
        text = _CONTROL.sub(" ", text)
    return _WS_RUN.sub(" ", text).strip()


def written(text: str, *, html: bool = False, visible: bool = False, deep: bool = False) -> str:
    """The text as written that a fingerprint reads: rules 2-4 only, for people.

    Markup goes as rule 4 removes it (``html``, else ``visible``, ``deep``
    as the scheme's features take it); spaces, punctuation and case stay.
    Lone surrogates become U+FFFD and NUL a space (rules 2 and 3): what a
    PostgreSQL text value can hold. Nothing else changes: the store keeps this
    (``simhash_documents.body``) and the web page shows it.
    """
    text = fix_surrogates(ensure_str(text))
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if html:
        return strip_html(text)
    if visible:
        return strip_markup_deep(text) if deep else strip_markup(text)
    return text


def normalize_visible(text: str, *, t2s: bool = True, ignorables: bool = True) -> str:
    """:func:`normalize` of the visible text (:func:`simhash_pg.text.visible.strip_markup`)."""
    return normalize(text, visible=True, t2s=t2s, ignorables=ignorables)


def _has_han(text: str) -> bool:
    return HAN.search(text) is not None
