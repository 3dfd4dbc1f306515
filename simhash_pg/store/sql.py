"""The statements the store sends, in one place (the SQL functions are in sql/).

The verified look-ups are in :mod:`simhash_pg.store.lookup`, the COPY
statements in :mod:`simhash_pg.store.copy`, the catalog queries of
``bulk_load`` and ``stats`` beside them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "COUNT",
    "DELETE",
    "GET",
    "INSERT",
    "KEYS",
    "NEAR",
    "NEAREST_MANY",
    "NEAR_MANY",
    "NEXT_IDS",
    "PAIRS",
    "add_statement",
    "int_array",
]

# simhash_add checks and inserts in one round trip, the text as written with
# the row (sql/current/add.sql; six parameters since revision 0023). A
# measurement may name another function with simhash_add's signature (the
# stream benchmark's lock-free copy, lab/bench/hooks.py): any plain SQL name.
_FUNCTION_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def int_array(values: Iterable[int]) -> str:
    """A one-dimensional array of ints as PostgreSQL's text literal, for ``%s::int[]``.

    Big arrays go this way: psycopg dumps a list element by element in Python
    (binary or text), which cost twice what building the literal and parsing
    it in the server cost (20,000 lock keys: 20 ms against 10 per batch).
    """
    return "{" + ",".join(map(str, values)) + "}"


def add_statement(function: str = "simhash_add") -> str:
    if not isinstance(function, str) or not _FUNCTION_NAME.fullmatch(function):
        raise ValueError(f"add_function must be a plain SQL function name, got {function!r}")
    return (
        "SELECT id, fingerprint, duplicate_of, distance, inserted, duplicate_key"
        f" FROM {function}(%s, %s, %s, %s, %s, %s)"
    )


GET = {
    col: "SELECT id, key, fingerprint, duplicate_of, created_at, meta, body"
    f" FROM simhash_documents WHERE {col} = %s"
    for col in ("id", "key")
}
DELETE = {col: f"DELETE FROM simhash_documents WHERE {col} = %s" for col in ("id", "key")}
COUNT = "SELECT count(*) FROM simhash_documents"
NEAR = (
    "SELECT n.id, n.key, n.distance, d.meta FROM simhash_near(%s, %s) AS n"
    " JOIN simhash_documents d ON d.id = n.id ORDER BY n.distance, n.id LIMIT %s"
)
NEAR_MANY = (
    "SELECT n.query, n.id, n.key, n.distance, d.meta FROM simhash_near_many(%s, %s) AS n"
    " JOIN simhash_documents d ON d.id = n.id ORDER BY n.query, n.distance, n.id"
)
# The nearest stored document per query: what add_many needs. add_many's
# arrays go in binary (%b): psycopg's text form quotes every element, which
# cost more than the look-up's own planning.
NEAREST_MANY = (
    "SELECT DISTINCT ON (n.query) n.query, n.id, n.key, n.distance"
    " FROM simhash_near_many(%b::bigint[], %s) AS n ORDER BY n.query, n.distance, n.id"
)
# Streamed through a server-side cursor (sql/current/pairs.sql: inlined, unsorted).
PAIRS = "SELECT a, b, distance FROM simhash_pairs(%s)"
KEYS = ("SELECT key, id, fingerprint, duplicate_of FROM simhash_documents"
        " WHERE key = ANY(%b::text[])")
NEXT_IDS = (
    "SELECT nextval(pg_get_serial_sequence('simhash_documents', 'id'))"
    " FROM generate_series(1, %s)"
)
INSERT = (
    "INSERT INTO simhash_documents"
    " (key, fingerprint, duplicate_of, meta, verify_text, sentence_sig, sentence_hashes, body)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)
