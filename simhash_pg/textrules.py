"""What the store accepts in a key and in meta: one rule each, here.

Keys and meta are stored as they are given (PostgreSQL ``text`` and
``jsonb``), so every string in them must be storable: no NUL, and valid
UTF-8, which a *lone surrogate* (a code point U+D800..U+DFFF, e.g. from the
JSON escape ``"\\udc80"`` or from ``surrogateescape`` decoding) is not. A key
is also limited in UTF-8 bytes, well under the 2,704 bytes of a btree index
row, so one long key can never stop a batch in the database.

Texts are not stored as they are: the fingerprint's normalisation turns lone
surrogates into U+FFFD (:func:`simhash_pg.text.normalize.fix_surrogates`, rule 2
of normalize.py), and ``dedup`` writes texts to its output files by that
same rule. ``dedup`` and the HTTP API both go by these rules alone: a text
with a lone surrogate is stored by either, a key with one refused by either.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["MAX_KEY_BYTES", "check_key", "check_meta", "lone_surrogate"]

# The key index's btree rows hold at most 2,704 bytes (PostgreSQL's limit for
# 8 kB pages); a quarter of a page leaves room for the index's own overhead
# and any later composite index on the key.
MAX_KEY_BYTES = 1024


def lone_surrogate(s: str) -> int | None:
    """The position of the first code point that UTF-8 cannot encode, or None."""
    if s.isascii():
        return None
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _surrogate_problem(s: str) -> str | None:
    at = lone_surrogate(s)
    if at is None:
        return None
    return (f"contains a lone surrogate (\\u{ord(s[at]):04x} at character {at}), "
            "which is not valid UTF-8")


def check_key(key: object) -> str | None:
    """``key`` if it can be stored and looked up; else TypeError or ValueError saying why."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise TypeError(f"key must be a str or None, got {type(key).__name__}")
    if "\x00" in key:
        raise ValueError("key contains a NUL character (\\x00), which PostgreSQL text cannot store")
    if len(key) * 4 <= MAX_KEY_BYTES and key.isascii():
        return key  # the common case, without encoding it
    problem = _surrogate_problem(key)
    if problem is not None:
        raise ValueError(f"key {problem}")
    size = len(key.encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise ValueError(f"key is {size:,} bytes in UTF-8; the limit is {MAX_KEY_BYTES:,} bytes")
    return key


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def check_meta(meta: object) -> dict[str, Any] | None:
    """``meta`` as a dict if it can be stored as jsonb; else TypeError or ValueError saying why."""
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise TypeError(f"meta must be a dict or None, got {type(meta).__name__}")
    for s in _strings(meta):
        if "\x00" in s:
            raise ValueError(
                "meta contains a NUL character (\\x00), which PostgreSQL jsonb cannot store"
            )
        problem = _surrogate_problem(s)
        if problem is not None:
            raise ValueError(f"meta {problem}")
    try:
        json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"meta is not JSON-serialisable: {exc}") from exc
    return dict(meta)
