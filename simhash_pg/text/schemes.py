"""Fingerprint schemes: the parameters that turn a text into a fingerprint.

Fingerprints made by two schemes cannot be compared, so a store keeps the
scheme with its fingerprints (as :meth:`Scheme.to_json`) and refuses to mix.

A scheme serialises to a small dict such as::

    {"name": "auto", "version": 4, "html": false, "visible": true, "t2s": true,
     "n": 5, "short": 50, "short_n": 2}

Only the keys that matter for ``name`` are present, all of them explicit, so a
stored dict never depends on this module's defaults. Equal dicts give identical
fingerprints for every text, forever: a change to how any scheme computes its
fingerprints needs a new ``version``, and old versions stay computable or are
refused by :meth:`Scheme.from_dict`.

Versions:

1. the first; its dicts have no ``visible`` key.
2. adds ``visible`` (default true): fingerprints, verification texts and
   sentence signatures are made of the *visible* text, well-formed tags
   stripped and entities decoded (:mod:`simhash_pg.text.visible`), which is
   what the eval sets' labelling rule compares. A text without well-formed
   markup fingerprints exactly as under version 1, and version 2 with
   ``visible=false`` equals version 1 for every text. Stores keep the
   version they were made with.
3. the same dict keys as version 2. With ``visible``, the
   *features* also look through markup escaped more than once
   (``&lt;p&gt;``, ``&amp;nbsp;``: :func:`simhash_pg.text.visible.strip_markup_deep`,
   :meth:`simhash_pg.text.simhash.Fingerprinter.feature_text`);
   verification texts and sentence signatures stay the visible text of
   version 2, which is what the labelling rule compares. A text in which
   nothing is left to decode after version 2's visible text (no ``&`` or
   ``<`` in it, or nothing well-formed) fingerprints exactly as under
   version 2; ``visible=false`` equals version 1 here too. Why: a page
   encoded twice keeps ``lt p gt`` and ``nbsp`` as letters in every
   paragraph, which moved its fingerprint beyond the probes' reach of pairs
   the rule calls duplicates (recall 0.68-0.85 on such copies, the weakest
   kind measured; docs/quality.md, "Escaped twice").
4. (new stores) the same dict keys as version 3. Normalisation also
   removes every Unicode Default_Ignorable_Code_Point, the Hangul fillers
   among them (``ignorables``, :data:`simhash_pg.text.normalize.IGNORABLE`),
   from the features, the verification text and the sentence signature
   alike. A text without one fingerprints exactly as under version 3. Why:
   U+FE0F, U+034F or a Hangul filler after each letter renders as the same
   text but moved its fingerprint 31-36 bits, so a copy slipped past the
   store (issue 29); the zero-width format characters were already dropped
   by the letters-digits-marks class, these are marks and letters.

Why ``auto`` is what it is (``../shared/eval``, ROC AUC of -distance over the
6,890 labelled document pairs, mean of 5 hash seeds; lab.evaluation):

    auto = chars n=5, binary   0.9888   (n=4 0.9887, n=6 0.9895, n=3 0.9851)
    chars n=5, tf weights      0.9861
    words, binary              0.9865
    zh-tfidf                   0.9751   (top_n=100: 0.9710; HMM on/off: equal)
    words, tf                  0.9630

On the 3,583 title pairs, shingles of 2 characters (what ``auto`` uses below
``short`` letters) score 0.9765, zh-tfidf 0.9664. Binary shingles spread the
weight, so duplicates sit a few bits further apart than with TF-IDF: at
equal false positives they are found more often, at a larger k (see the
evaluation module's recall/FP table: k = 6-7 for ``auto``, 3 for zh-tfidf).

``auto`` is itself a deterministic function of the text (it looks at the
number of letters and digits of the normalised text), so the one ``auto`` dict
covers every document stored with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "DEFAULT_SCHEME",
    "SCHEME_NAMES",
    "SCHEME_VERSION",
    "Scheme",
    "get_scheme",
]

SCHEME_NAMES = ("auto", "zh-tfidf", "words", "chars")
SCHEME_VERSION = 4
SUPPORTED_VERSIONS = frozenset({1, 2, 3, 4})
# Parameters that exist only from a version on (older dicts never carry them).
_SINCE = {"visible": 2}

# Which parameters each scheme reads; to_dict emits exactly these.
_COMMON = ("html", "visible", "t2s")
_PARAMS: dict[str, tuple[str, ...]] = {
    "zh-tfidf": (*_COMMON, "top_n", "hmm"),
    "words": (*_COMMON, "weight"),
    "chars": (*_COMMON, "n", "weight"),
    "auto": (*_COMMON, "n", "short", "short_n"),
}
_DEFAULTS_BY_NAME: dict[str, dict[str, Any]] = {
    # words weighs by term frequency, as documented; chars by presence, which
    # measured better on the eval set (set overlap is what near-duplicate means).
    "words": {"weight": "tf"},
    "chars": {"weight": "binary"},
}


def _is_int(v: object, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


@dataclass(frozen=True)
class Scheme:
    """An immutable, serialisable fingerprint scheme.

    name
        ``"zh-tfidf"``: jieba words weighted by TF x IDF (jieba's IDF table,
        median IDF for unknown words), punctuation and a few particles
        (的, 了, 是, ...) dropped.
        ``"words"``: Unicode word tokens (letters, digits, marks, ``_``).
        ``"chars"``: character ``n``-gram shingles of the letters, digits and
        marks of the text (white space and punctuation removed first).
        ``"auto"`` (the default): ``chars`` with ``weight="binary"``, shingles
        of ``n`` characters, or of ``short_n`` characters when the text has
        fewer than ``short`` letters and digits (titles, messages).
    html
        Parse the text as HTML (selectolax) and keep its text, without
        ``<script>``/``<style>`` content, entities decoded, before anything
        else. Off by default and meant for whole HTML pages: in plain text, "<" followed by
        a letter opens a tag, and everything up to the next ">" (or the end of
        the text) is dropped ("x <y and more" -> "x"). On the eval set it left
        the AUC unchanged; on HTML-wrapped articles it took the distance to
        the plain text from a median of 5-7 bits to 0.
    visible
        (Version 2 on; the default.) Replace well-formed tags by a space and
        decode entities first (:func:`simhash_pg.text.visible.strip_markup`):
        text that merely contains ``<`` or ``&`` stays as it is. On a set of
        marked-up copies of the eval's articles it took the distance to the
        plain text from a median of 9-18 bits to 0 (lab/experiments/
        margin_probes.md, "Real-world noise"). Cannot be combined with
        ``html`` (which strips markup itself).
    t2s
        Fold traditional Chinese to simplified (OpenCC ``t2s``). On by default:
        it took traditional copies of 300 articles from a median distance of
        28 bits to 0, cost about 0.01 ms per 700-character text, and left the
        eval AUC unchanged. Character-level only: regional vocabulary
        (線上 vs 在线) stays different.
    top_n
        ``zh-tfidf``: keep only the ``top_n`` heaviest words (None: all).
    hmm
        ``zh-tfidf``: let jieba's HMM find words missing from its dictionary.
        Off by default: on the eval set it left the AUC unchanged (0.9751 both,
        mean of 5 hash seeds) and costs jieba about a third more time.
    n
        ``chars``/``auto``: shingle length in characters.
    weight
        ``words``/``chars``: ``"tf"`` (count in the text) or ``"binary"``
        (1 for every distinct feature).
    short, short_n
        ``auto``: the length (in letters and digits) below which a text is
        short, and the shingle length used for short texts.
    """

    name: str = "auto"
    version: int = SCHEME_VERSION
    html: bool = False
    visible: bool | None = None  # None: true from version 2 on, unless html
    t2s: bool = True
    top_n: int | None = None
    hmm: bool = False
    n: int = 5
    weight: str = ""
    short: int = 50
    short_n: int = 2

    def __post_init__(self) -> None:
        if self.name not in _PARAMS:
            raise ValueError(
                f"unknown scheme {self.name!r}; expected one of {', '.join(SCHEME_NAMES)}"
            )
        if isinstance(self.version, bool) or self.version not in SUPPORTED_VERSIONS:
            raise ValueError(
                f"scheme version {self.version!r} is not supported by this simhash-pg "
                f"(supported: {sorted(SUPPORTED_VERSIONS)}); upgrade simhash-pg"
            )
        for flag in ("html", "t2s", "hmm"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"scheme parameter {flag!r} must be a bool")
        if self.visible is None:
            object.__setattr__(self, "visible", self.version >= _SINCE["visible"] and not self.html)
        if not isinstance(self.visible, bool):
            raise TypeError("scheme parameter 'visible' must be a bool")
        if self.visible and self.version < _SINCE["visible"]:
            raise ValueError(f"scheme parameter 'visible' needs scheme version "
                             f"{_SINCE['visible']} (this is version {self.version})")
        if self.visible and self.html:
            raise ValueError("scheme parameters 'html' and 'visible' exclude each other: "
                             "html=true strips the markup itself")
        if self.top_n is not None and not _is_int(self.top_n, 1, 1 << 30):
            raise ValueError("scheme parameter 'top_n' must be None or an int >= 1")
        for key, hi in (("n", 16), ("short_n", 16), ("short", 1 << 20)):
            if not _is_int(getattr(self, key), 1, hi):
                raise ValueError(f"scheme parameter {key!r} must be an int from 1 to {hi}")
        if not self.weight:
            object.__setattr__(
                self, "weight", _DEFAULTS_BY_NAME.get(self.name, {}).get("weight", "")
            )
        used = _PARAMS[self.name]
        if "weight" in used and self.weight not in ("tf", "binary"):
            raise ValueError("scheme parameter 'weight' must be 'tf' or 'binary'")
        # Parameters this scheme does not read go back to their defaults, so
        # that equal behaviour means equal objects (and equal dicts).
        for f in fields(self):
            if f.name not in ("name", "version", "visible") and f.name not in used:
                object.__setattr__(self, f.name, f.default)

    @property
    def ignorables(self) -> bool:
        """Whether normalisation drops the default-ignorable code points (version 4 on)."""
        return self.version >= 4

    def to_dict(self) -> dict[str, Any]:
        """The scheme as a small JSON-able dict; see the module docstring."""
        out: dict[str, Any] = {"name": self.name, "version": self.version}
        for key in _params(self.name, self.version):
            out[key] = getattr(self, key)
        return out

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, no spaces. Equal schemes, equal strings."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scheme:
        """Rebuild a scheme from :meth:`to_dict` output, strictly.

        Unknown keys are an error rather than ignored: a dict written by a newer
        simhash-pg may mean something this version cannot compute.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"a scheme dict must be a mapping, got {type(data).__name__}")
        name = data.get("name")
        if name not in _PARAMS:
            raise ValueError(f"unknown scheme {name!r}; expected one of {', '.join(SCHEME_NAMES)}")
        if "version" not in data:
            raise ValueError("a scheme dict needs a 'version'")
        version = data["version"]
        if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
            return cls(**dict(data))  # raises the version error
        allowed = {"name", "version", *_params(name, version)}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ValueError(f"unknown parameter(s) for scheme {name!r} version {version}: "
                             f"{', '.join(unknown)}")
        return cls(**dict(data))

    @classmethod
    def from_json(cls, text: str) -> Scheme:
        return cls.from_dict(json.loads(text))

    def __str__(self) -> str:
        return self.to_json()


DEFAULT_SCHEME = Scheme()


def _params(name: str, version: int) -> tuple[str, ...]:
    """The parameters a scheme of this name and version reads (and its dict holds)."""
    return tuple(k for k in _PARAMS[name] if version >= _SINCE.get(k, 1))


def _parse_value(key: str, raw: str) -> Any:
    low = raw.strip().lower()
    if key in ("html", "visible", "t2s", "hmm"):
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"scheme parameter {key!r} must be true or false, got {raw!r}")
    if key == "top_n":
        return None if low in ("none", "null", "0", "") else int(low)
    if key in ("n", "version", "short", "short_n"):
        return int(low)
    if key == "weight":
        return low
    raise ValueError(f"unknown scheme parameter {key!r}")


def get_scheme(spec: Scheme | Mapping[str, Any] | str | None = None) -> Scheme:
    """Resolve a scheme from what a user may pass.

    - ``None``: the default (``auto`` with the measured defaults);
    - a :class:`Scheme`: itself;
    - a dict: :meth:`Scheme.from_dict` (strict; used for stored schemes);
    - a JSON string: the same;
    - a name with optional parameters: ``"chars"``, ``"chars:n=4"``,
      ``"zh-tfidf:top_n=200,html=true"``, ``"auto:version=1"``. Parameters
      not given take the defaults of this version.
    """
    if spec is None:
        return DEFAULT_SCHEME
    if isinstance(spec, Scheme):
        return spec
    if isinstance(spec, Mapping):
        return Scheme.from_dict(spec)
    if not isinstance(spec, str):
        raise TypeError(
            f"a scheme must be None, a Scheme, a dict or a str, got {type(spec).__name__}"
        )
    text = spec.strip()
    if text.startswith("{"):
        return Scheme.from_json(text)
    name, _, rest = text.partition(":")
    name = name.strip()
    if name not in _PARAMS:
        raise ValueError(f"unknown scheme {name!r}; expected one of {', '.join(SCHEME_NAMES)}")
    params: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq:
            raise ValueError(f"scheme parameter {item!r} must look like key=value")
        if key != "version" and key not in _PARAMS[name]:
            raise ValueError(f"unknown parameter {key!r} for scheme {name!r}")
        params[key] = _parse_value(key, raw)
    return Scheme(name=name, **params)
