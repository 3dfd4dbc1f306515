"""The visible text of input that may carry leftover HTML markup.

Scraped text often keeps some of its page: ``<p style="...">``, ``<a href=...>``,
``&nbsp;``, ``&amp;``, ``&#x4e2d;``. Left in, every tag adds n-grams of ASCII
(class names, styles, URLs) that have nothing to do with the content, and in
Chinese text they can be a large share of all features: the fingerprint moves
and verification compares markup. The labelling rule of the eval sets defines
a text's content as its *visible* text: tags removed, entities decoded.

:func:`strip_markup` does that for *well-formed* markup only, so plain text
stays as it is:

- a tag is ``<`` directly followed by the name of an HTML element (``p``,
  ``div``, ``br``, ``font`` ...; :data:`HTML_ELEMENTS`, any case), a
  namespaced name (``o:p``, from word processors) or a custom element name
  (with a ``-``), optionally ``/`` first, then ``>``, or white space or ``/``
  and attributes of which at least one has a value (``name=...``), closed by
  ``>`` within 300 characters with no ``<`` or ``>`` between. So ``a < b``,
  ``x <y and more``, ``3<4``, ``a<b and c>d``, ``List<String>``, ``<T>`` and
  ``《书名》`` are text (a tag with only bare attributes, ``<td nowrap>``, is
  text too: rare in scraped articles, common in prose and math); ``<!-- ... -->`` comments,
  ``<!DOCTYPE ...>`` and ``<?xml ...?>`` go whole;
- an entity is ``&name;`` with a name of the HTML5 table, or ``&#123;`` /
  ``&#x1F;``, the ``;`` included. ``AT&T``, ``R&D``, ``&nbsp`` without ``;``
  and ``this&nothing`` stay as written (:func:`html.unescape` alone would
  turn the last into ``this¬hing``).

Tags become a space (block elements separate words); entities are decoded
after the tags are gone, so ``&lt;p&gt;`` is text, not a tag.

Unlike the scheme option ``html=True`` (a full HTML parser), nothing else is
removed: ``<script>``/``<style>`` content stays, as the labelling rule keeps
it, and a ``<`` in plain text never swallows the text after it.

The default scheme (``visible=true`` from version 2 on, :mod:`simhash_pg.text.schemes`)
fingerprints this visible text (from version 3 on, :func:`strip_markup_deep`'s);
a text in which nothing is well-formed markup fingerprints exactly as under
version 1.
"""

from __future__ import annotations

import html
import re
from html.entities import html5

from simhash_pg.text.strs import ensure_str

__all__ = ["HTML_ELEMENTS", "strip_markup", "strip_markup_deep"]

# The element names of the HTML Living Standard, with the obsolete ones still
# found in scraped pages (font, center, big ...). A name outside this set is
# not a tag unless it is namespaced (o:p) or a custom element (x-y): so that
# generics in code (List<String>, <T>) and math stay text.
HTML_ELEMENTS = frozenset("""
a abbr acronym address applet area article aside audio b base basefont bdi bdo bgsound big
blink blockquote body br button canvas caption center cite code col colgroup data datalist
dd del details dfn dialog dir div dl dt em embed fieldset figcaption figure font footer form
frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins isindex
kbd keygen label legend li link listing main map mark marquee math menu menuitem meta meter
multicol nav nextid nobr noembed noframes noscript object ol optgroup option output p param
picture plaintext pre progress q rb rp rt rtc ruby s samp script search section select slot
small source spacer span strike strong style sub summary sup svg table tbody td template
textarea tfoot th thead time title tr track tt u ul var video wbr xmp
""".split())

_TAG = re.compile(
    r"<!--.*?-->"  # a comment, whole
    r"|</?([A-Za-z][A-Za-z0-9:_-]*)([\s/][^<>]{0,300})?>"  # <p ...>, </p>, <br/>, <o:p>
    r"|<[!?][^<>]{0,300}>",  # <!DOCTYPE ...>, <?xml ...?>
    re.DOTALL,
)
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{0,31});")


def _is_tag_name(name: str) -> bool:
    return name.lower() in HTML_ELEMENTS or ":" in name or "-" in name


def _tag(m: re.Match[str]) -> str:
    name, attrs = m.group(1, 2)
    if name is None:
        return " "  # a comment, <!...> or <?...>
    if not _is_tag_name(name) or (attrs and "=" not in attrs and attrs.strip(" \t\r\n\f/")):
        return m.group(0)
    return " "


def _entity(m: re.Match[str]) -> str:
    ent = m.group(0)
    if ent[1] != "#" and ent[1:] not in html5:
        return ent  # not an HTML entity: text such as "&foo;"
    return html.unescape(ent)


def strip_markup(text: str) -> str:
    """``text`` with well-formed tags replaced by a space and entities decoded."""
    if not isinstance(text, str):
        ensure_str(text)  # raises the helpful TypeError
    if "<" in text:
        text = _TAG.sub(_tag, text)
    if "&" in text:
        text = _ENTITY.sub(_entity, text)
    return text


# A page escaped three times (&amp;amp;lt;p&amp;amp;gt;) is seen through; more
# is rare enough that the cost bound wins.
ESCAPE_ROUNDS = 3


def strip_markup_deep(text: str) -> str:
    """:func:`strip_markup`, again while it still changes something (at most
    :data:`ESCAPE_ROUNDS` more times): markup escaped more than once goes too.

    A page encoded twice shows ``&lt;p&gt;`` and ``&amp;nbsp;``; one decoding
    (the labelling rule's) leaves ``<p>`` and ``&nbsp;`` as text, the next
    removes the tag and decodes the entity. It runs on the text as written
    (entity names are case-sensitive: ``&AC;`` is text, ``&ac;`` is not), and
    is for fingerprint features only (scheme version 3), never verification.
    """
    out = strip_markup(text)
    for _ in range(ESCAPE_ROUNDS):
        if "&" not in out and "<" not in out:
            break
        again = strip_markup(out)
        if again == out:
            break
        out = again
    return out
