"""The evidence of a store's pairs: :mod:`simhash_pg.verify.evidence` over rows read here.

:func:`explain` reads the stored rows and their keys' holders and asks
:func:`~simhash_pg.verify.evidence.explain_pair` of each; :func:`shares`
reads kept texts for the rule's similarity. ``simhash-pg near --explain``,
``/v1/near`` with ``explain``, dedup's report and the web page use them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from simhash_pg.bits import to_unsigned
from simhash_pg.store.core import SimhashStore
from simhash_pg.verify.evidence import Evidence, PairQuery, StoredRow, explain_pair
from simhash_pg.verify.jaccard import from_norm
from simhash_pg.verify.rule import TEXT_LOST

__all__ = ["explain", "explain_stored", "pair_query", "read_holders", "read_rows", "shares"]


def pair_query(store: SimhashStore, query: str | int) -> PairQuery:
    """A query as ``store.near`` looks it up: a verified text with its keys and probes."""
    if isinstance(query, str) and store.policy.verifies:
        return PairQuery.of_text(store.fingerprinter, query, store.policy)
    return PairQuery(store.fingerprint(query))


# The rows, with what the look-up reads of them (as store/lookup.py's
# _NEAR reads it: a row stored before revision 0003 added the columns, as
# simhash_meta's 'unverified_rows' records, lost its text).
_ROWS = (
    "SELECT d.id, d.key, d.fingerprint, d.verify_text, d.sentence_sig, d.sentence_hashes,"
    " d.duplicate_of, d.body,"
    " coalesce(d.verify_text IS NULL AND d.id <= (u.value->>'max_id')::bigint"
    " AND d.created_at <= (u.value->>'stored_until')::timestamptz, false)"
    " FROM simhash_documents d LEFT JOIN simhash_meta u ON u.name = 'unverified_rows'"
    " WHERE d.id = ANY(%s)"
)
# Each key's holders, (id, fingerprint), at most 257 (enough to tell a key over
# the boilerplate cap): what key_holders_found ranks, as simhash_sentence_matches
# does (a key row stored before revision 0018 has its document's fingerprint).
_HOLDERS = (
    "SELECT h.hash, k.id, coalesce(k.fingerprint, (SELECT x.fingerprint FROM simhash_documents x"
    " WHERE x.id = k.id AND x.created_at = k.created_at LIMIT 1))"
    " FROM unnest(%s::bigint[]) AS h (hash)"
    " CROSS JOIN LATERAL (SELECT * FROM simhash_text_keys k WHERE k.hash = h.hash LIMIT 257) k"
)


def read_rows(conn: psycopg.Connection[Any], ids: Sequence[int]) -> dict[int, StoredRow]:
    """The stored rows of ``ids`` (those that exist), by id."""
    return {id_: row for id_, (row, _) in _read(conn, ids).items()}


def _read(conn: psycopg.Connection[Any], ids: Sequence[int]
          ) -> dict[int, tuple[StoredRow, str | None]]:
    """The stored rows of ``ids`` with their bodies (the texts as written), by id."""
    out: dict[int, tuple[StoredRow, str | None]] = {}
    for id_, key, fp, text, sig, hashes, dup, body, lost in conn.execute(
            _ROWS, [list(ids)]).fetchall():
        out[id_] = (StoredRow(id_, key, to_unsigned(fp), TEXT_LOST if lost else text, sig,
                              tuple(hashes or ()), dup), body)
    return out


def read_holders(conn: psycopg.Connection[Any], keys: Sequence[int]
                 ) -> dict[int, list[tuple[int, int]]]:
    """Per key, the rows that hold it as ``(id, signed fingerprint)``, at most 257."""
    out: dict[int, list[tuple[int, int]]] = {h: [] for h in keys}
    if keys:
        for h, id_, fp in conn.execute(_HOLDERS, [list(keys)]).fetchall():
            out[h].append((id_, fp))
    return out


def _holders(store: SimhashStore, query: PairQuery, rows: Sequence[StoredRow]
             ) -> dict[int, list[tuple[int, int]]] | None:
    if query.vtext is None or not store.policy.signature:
        return None
    held: set[int] = set()
    for r in rows:
        held.update(r.hashes)
    return read_holders(store.connection, sorted(held.intersection(query.vtext.hashes)))


def explain(store: SimhashStore, query: str | int | PairQuery, ids: Sequence[int],
            k: int | None = None) -> list[Evidence]:
    """The evidence of each stored row of ``ids`` (in that order; a missing id is left out)
    for ``query`` at ``k`` (default: the store's), as ``store.near`` would look it up."""
    q = query if isinstance(query, PairQuery) else pair_query(store, query)
    found = read_rows(store.connection, ids)
    rows = [found[i] for i in ids if i in found]
    holders = _holders(store, q, rows)
    kk = store.k if k is None else k
    return [explain_pair(q, r, kk, store.policy, holders) for r in rows]


def explain_stored(store: SimhashStore, query_id: int, row_id: int,
                   k: int | None = None) -> Evidence | None:
    """The evidence of two stored documents: ``query_id`` looking up ``row_id``
    (a later document looks up the one it duplicates). None if either is missing.

    The query is its text as written where the store keeps it (``body``,
    revision 0021) and it still gives the stored fingerprint: then its probe
    values and its keys' kinds are known, as for a pasted text. Otherwise
    the keys it stores, without their kinds, and no probe values.
    """
    found = _read(store.connection, [query_id, row_id])  # one round trip, bodies with them
    if query_id not in found or row_id not in found:
        return None
    (query_row, body), (row, _) = found[query_id], found[row_id]
    q = PairQuery.of_row(query_row)
    if isinstance(body, str) and store.policy.verifies:
        written = PairQuery.of_text(store.fingerprinter, body, store.policy)
        if written.fingerprint == q.fingerprint:  # else the body is not what was fingerprinted
            q = written
    kk = store.k if k is None else k
    return explain_pair(q, row, kk, store.policy, _holders(store, q, [row]))


def shares(store: SimhashStore, pairs: Sequence[tuple[int | str, int]]) -> list[float | None]:
    """The rule's similarity of each ``(query, stored id)`` pair: its evidence's
    :attr:`Evidence.similarity`, for many pairs at once (dedup's report, the demo).

    A query is a stored id (its kept text is read) or a text (normalised as
    the store normalises). None where a side's text is not kept, or where the
    store does not verify texts (the rule then measures none).
    """
    if not store.policy.verifies:
        return [None] * len(pairs)
    ids = {i for q, i in pairs} | {q for q, _ in pairs if isinstance(q, int)}
    texts: dict[int, str | None] = dict(store.connection.execute(
        "SELECT id, verify_text FROM simhash_documents WHERE id = ANY(%s)",
        [sorted(ids)]).fetchall()) if ids else {}
    out: list[float | None] = []
    for q, i in pairs:
        a = (texts.get(q) if isinstance(q, int)
             else from_norm(store.fingerprinter.normalize(q)).text)
        b = texts.get(i)
        rule = store.policy.text_rule
        out.append(rule.similarity(a, b) if a is not None and b is not None else None)
    return out
