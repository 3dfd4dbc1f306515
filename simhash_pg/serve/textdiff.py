"""Two texts' shared and differing passages, for the web page's side-by-side view.

The page shows texts as written (``body``: spaces, punctuation and case).
Text in spaced scripts is compared word by word, CJK character by character
(a CJK word has no spaces around it, and one changed character is what a
reader looks for); words match whatever their case or width (NFKC,
casefold), white space whatever its kind, and punctuation marks are tokens
of their own, so "Bridge," and "bridge." share the word. A shared run of
fewer than two words (or characters) between two changes is shown as part
of the change, so that a rewritten passage reads as one. A text of letters
and digits only, such as the verification text a store keeps when it has no
body, is compared character by character.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from simhash_pg.text.charclass import HAN_CLASS

__all__ = ["MAX_TOKENS", "Diff", "Piece", "diff", "lang_of", "token_key", "tokens"]

# Han (simhash_pg.text.charclass's), kana, Hangul, and their radicals and
# compatibility forms
_CJK = f"{HAN_CLASS}\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff" \
       "\uac00-\ud7af\uff66-\uff9f"
_CJK_CHAR = re.compile(f"[{_CJK}]")
# a CJK character; a run of other word characters; a run of whitespace; anything else
_TOKEN = re.compile(f"[{_CJK}]|(?:(?![{_CJK}])\\w)+|\\s+|.", re.DOTALL)
_SPACE = re.compile(r"\s")
_WORDISH = re.compile(r"\w")

# SequenceMatcher is quadratic at worst: longer texts are compared up to here
MAX_TOKENS = 20_000

Op = Literal["same", "changed"]


@dataclass(frozen=True)
class Piece:
    """A passage of one side: shared with the other side, or not."""

    op: Op
    text: str


@dataclass(frozen=True)
class Diff:
    a: list[Piece]
    b: list[Piece]
    ratio: float  # the share of tokens in common, 0..1 (SequenceMatcher.ratio)
    by: Literal["words", "characters"]
    truncated: bool


def tokens(text: str) -> list[str]:
    """Words, whitespace runs, CJK characters and other characters; a text of
    letters and digits only (a verification text): its characters."""
    if text.isalnum() and not _SPACE.search(text):
        return list(text)
    return _TOKEN.findall(text)


def token_key(token: str) -> str:
    """What a token is compared by: one space for any white space, else its
    NFKC casefolded form ("The" and "the", "Ａ" and "a" match)."""
    if token.isspace():
        return " "
    return unicodedata.normalize("NFKC", token).casefold()


def diff(a: str, b: str) -> Diff:
    """The pieces of ``a`` and of ``b``, each marked shared (``same``) or not (``changed``).

    The pieces hold the texts as given; they are matched by :func:`token_key`.
    """
    ta, tb = tokens(a), tokens(b)
    truncated = len(ta) > MAX_TOKENS or len(tb) > MAX_TOKENS
    ta, tb = ta[:MAX_TOKENS], tb[:MAX_TOKENS]
    # by words when words outnumber CJK characters (a CJK text's Latin words
    # are still tokens of their own)
    words = sum(1 for t in ta + tb if len(t) > 1 and not t.isspace())
    cjk = sum(1 for t in ta + tb if _CJK_CHAR.fullmatch(t))
    by: Literal["words", "characters"] = "words" if words > cjk else "characters"
    # autojunk off: in CJK text the common characters are exactly what must match
    sm = SequenceMatcher(None, [token_key(t) for t in ta], [token_key(t) for t in tb],
                         autojunk=False)
    pa: list[Piece] = []
    pb: list[Piece] = []
    codes = sm.get_opcodes()
    for n, (tag, i1, i2, j1, j2) in enumerate(codes):
        op: Op = "same" if tag == "equal" else "changed"
        if op == "same" and 0 < n < len(codes) - 1 and _scrap(ta[i1:i2]):
            op = "changed"
        _append(pa, op, "".join(ta[i1:i2]))
        _append(pb, op, "".join(tb[j1:j2]))
    return Diff(pa, pb, sm.ratio(), by, truncated)


def _scrap(run: list[str]) -> bool:
    """A shared run between two changes that holds fewer than two words (or CJK
    characters): white space, punctuation, a lone "the". Marked shared it only
    breaks a changed passage into pieces; it is shown as part of the change."""
    return sum(1 for t in run if _WORDISH.search(t)) < 2


def _append(pieces: list[Piece], op: Op, text: str) -> None:
    if not text:
        return
    if pieces and pieces[-1].op == op:
        pieces[-1] = Piece(op, pieces[-1].text + text)
    else:
        pieces.append(Piece(op, text))


def lang_of(text: str | None) -> str | None:
    """``"zh"`` for a text that is mostly CJK (so the browser picks a CJK font), else None."""
    if not text:
        return None
    sample = text[:2000]
    cjk = len(_CJK_CHAR.findall(sample))
    letters = sum(c.isalpha() for c in sample)
    return "zh" if letters and cjk * 2 >= letters else None
