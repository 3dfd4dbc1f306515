"""Read-only listings of stored documents: what the web page, ``/v1/groups``
and ``dedup`` show, as :class:`SimhashStore <simhash_pg.store.core.SimhashStore>`
methods (a mixin, so that the facade stays one file of operations).

- :meth:`Browse.get`: a row by id or key (with its body, the text as written);
- :meth:`Browse.document` / :meth:`Browse.documents`: rows with their kept texts;
- :meth:`Browse.recent`: the newest rows, a page at a time;
- :meth:`Browse.groups`: the documents near-duplicates were linked to, with them;
- :meth:`Browse.key_reader`: rows by key on a connection of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import psycopg

from simhash_pg.bits import to_unsigned
from simhash_pg.db import layout
from simhash_pg.store import sql
from simhash_pg.store.checks import check_id_or_key
from simhash_pg.store.results import AddResult, Document

__all__ = ["Browse", "DocumentWithText", "DuplicateGroup", "KeyReader", "LinkedDuplicate"]


@dataclass(frozen=True)
class DocumentWithText(Document):
    """A stored row with its verification text (None: the store does not keep it)
    besides its ``body``."""

    text: str | None = None


class LinkedDuplicate(NamedTuple):
    """A document stored with ``duplicate_of`` a group's head."""

    id: int
    key: str | None
    distance: int  # from the head's fingerprint


class DuplicateGroup(NamedTuple):
    """A document and the near-duplicates linked to it (the first 100, by id)."""

    id: int
    key: str | None
    size: int  # the head and all its linked duplicates
    members: list[LinkedDuplicate]


_ROW = ("SELECT id, key, fingerprint, duplicate_of, created_at, meta, body, verify_text"
        " FROM simhash_documents")
# One page of groups, by the id of the document the others were linked to
# (on_duplicate="link" stores near-duplicates with duplicate_of; under
# "skip" there are none). The partial index on duplicate_of serves it.
_GROUPS = """
WITH heads AS (
    SELECT duplicate_of AS head, count(*) AS n FROM simhash_documents
    WHERE duplicate_of IS NOT NULL AND duplicate_of > %(after)s
    GROUP BY duplicate_of ORDER BY duplicate_of LIMIT %(limit)s)
SELECT h.head, d.key, h.n + 1, m.members
FROM heads h
JOIN simhash_documents d ON d.id = h.head
CROSS JOIN LATERAL (
    SELECT coalesce(json_agg(json_build_array(x.id, x.key,
                    simhash_hamming(x.fingerprint, d.fingerprint)) ORDER BY x.id), '[]')
    FROM (SELECT id, key, fingerprint FROM simhash_documents
          WHERE duplicate_of = h.head ORDER BY id LIMIT 100) x) m(members)
ORDER BY h.head
"""
_KEYS = ("SELECT key, id, fingerprint, duplicate_of FROM simhash_documents"
         " WHERE key = ANY(%s)")


def _doc(r: tuple[Any, ...]) -> DocumentWithText:
    return DocumentWithText(r[0], r[1], to_unsigned(r[2]), r[3], r[4], r[5], body=r[6],
                            text=r[7])


class Browse:
    """The listings; :class:`~simhash_pg.store.core.SimhashStore` gives them its connection."""

    @property
    def connection(self) -> psycopg.Connection[Any]:
        raise NotImplementedError

    @property
    def dsn(self) -> str:
        raise NotImplementedError

    schema: str  # the store's PostgreSQL schema (revision 0022)

    def get(self, id_or_key: int | str) -> Document | None:
        """The stored row with this id (int) or key (str), or None."""
        col, value = check_id_or_key(id_or_key)
        row = self.connection.execute(sql.GET[col], [value], prepare=True).fetchone()
        if row is None:
            return None
        return Document(row[0], row[1], to_unsigned(row[2]), row[3], row[4], row[5], row[6])

    def document(self, id_or_key: int | str) -> DocumentWithText | None:
        """The stored row with this id (int) or key (str), with its text; None if none."""
        if isinstance(id_or_key, int):
            r = self.connection.execute(_ROW + " WHERE id = %s", [id_or_key]).fetchone()
        else:
            # the key's row, through simhash_keys (one row per key across partitions)
            r = self.connection.execute(
                _ROW + " WHERE id = (SELECT id FROM simhash_keys WHERE key = %s)",
                [id_or_key]).fetchone()
        return _doc(r) if r is not None else None

    def documents(self, ids: Sequence[int]) -> dict[int, DocumentWithText]:
        """The stored rows of ``ids`` (those that exist), by id, in one round trip."""
        return {r[0]: _doc(r) for r in self.connection.execute(
            _ROW + " WHERE id = ANY(%s)", [list(ids)]).fetchall()}

    def recent(self, *, limit: int, before: int | None = None) -> list[DocumentWithText]:
        """The newest rows first, ``limit`` of them, ids below ``before`` if given (ids
        are handed out in insertion order)."""
        where = " WHERE id < %(before)s" if before is not None else ""
        return [_doc(r) for r in self.connection.execute(
            _ROW + where + " ORDER BY id DESC LIMIT %(limit)s",
            {"before": before, "limit": limit}).fetchall()]

    def groups(self, *, limit: int, after: int = 0) -> list[DuplicateGroup]:
        """One page of duplicate groups, by head id, heads after ``after``."""
        rows = self.connection.execute(_GROUPS, {"after": after, "limit": limit}).fetchall()
        return [DuplicateGroup(head, key, size,
                               [LinkedDuplicate(i, k, dist) for i, k, dist in members])
                for head, key, size, members in rows]

    def key_reader(self) -> KeyReader | None:
        """A :class:`KeyReader` on a second connection; None when the server allows none."""
        with contextlib.suppress(psycopg.Error):
            conn = psycopg.connect(self.dsn, autocommit=True)
            layout.use_schema(conn, self.schema)
            return KeyReader(conn)
        return None


class KeyReader:
    """Stored rows by key, on a connection of its own: the store's may be inside a
    batch (``dedup`` skips a rerun's known keys before fingerprinting them)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def known(self, keys: Sequence[str]) -> dict[str, AddResult]:
        """The stored rows of ``keys``, as the results an add of an existing key gives."""
        rows = self._conn.execute(_KEYS, [list(keys)]).fetchall()
        return {key: AddResult(id=id_, fingerprint=to_unsigned(fp), duplicate_of=dup,
                               distance=None, inserted=False, key=key, existing_key=True)
                for key, id_, fp, dup in rows}

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> KeyReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
