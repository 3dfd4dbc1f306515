"""Opt-in: the visible text of input that may carry leftover HTML markup.

Scraped text often keeps some of its page: ``<p style="...">``, ``<a href=...>``,
``&nbsp;``, ``&amp;``, ``&#x4e2d;``. Left in, every tag adds n-grams of ASCII
(class names, styles, URLs) that have nothing to do with the content, and in
Chinese text they can be a large share of all features: the fingerprint moves
and verification compares markup. The labelling rule of the eval sets defines
a text's content as its *visible* text: tags removed, entities decoded.

:func:`strip_markup` does that for *well-formed* markup only, so plain text
stays as it is: a tag must open with ``<`` directly followed by a letter (an
element name), ``/``, ``!`` or ``?``, and close with ``>`` within 300
characters, without another ``<`` or ``>`` between (``a < b > c`` and
``x <y and more`` are left alone); comments ``<!-- ... -->`` go whole. Tags
become a space (block elements separate words), then entities are decoded by
:func:`html.unescape` (HTML5 rules; ``AT&T`` stays).

Unlike the scheme option ``html=True`` (a full HTML parser), nothing else is
removed: ``<script>``/``<style>`` content stays, as the labelling rule keeps it,
and a ``<`` in plain text never swallows the text after it.

Not used by any default: applying it to fingerprints changes stored
fingerprints, so it needs a new scheme version (``schemes.py``).
"""

from __future__ import annotations

import html
import re

from simhash_pg.text.normalize import ensure_str, normalize

__all__ = ["normalize_visible", "strip_markup"]

_MARKUP = re.compile(
    r"<!--.*?-->"  # a comment, whole
    r"|</?[A-Za-z][A-Za-z0-9:_-]*(?:[\s/][^<>]{0,300})?>"  # a tag: <p ...>, </p>, <br/>
    r"|<[!?][^<>]{0,300}>",  # <!DOCTYPE ...>, <?xml ...?>
    re.DOTALL,
)


def strip_markup(text: str) -> str:
    """``text`` with well-formed tags replaced by a space and entities decoded."""
    text = ensure_str(text)
    if "<" not in text and "&" not in text:
        return text
    return html.unescape(_MARKUP.sub(" ", text))


def normalize_visible(text: str, *, t2s: bool = True) -> str:
    """:func:`simhash_pg.text.normalize.normalize` of the visible text (:func:`strip_markup`)."""
    return normalize(strip_markup(text), t2s=t2s)
