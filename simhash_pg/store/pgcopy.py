"""Rows into simhash_documents by binary COPY: the one place that writes them.

Two writers, one format (PostgreSQL's binary COPY: a header, rows of
length-prefixed fields, a trailer):

- :func:`copy_documents`: whole rows (key, meta, verification text, body...), each
  field encoded by psycopg; what ``add_many`` and ``bulk_load`` write;
- :func:`binary_copy_data`: fixed-width fields built by NumPy, millions of
  rows a second; ``bulk_load``'s bare fingerprints and the benchmarks'
  tables use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from simhash_pg.bits import to_signed_array

__all__ = [
    "CHUNK_ROWS",
    "DOCUMENT_COLUMNS",
    "FINGERPRINT_COLUMNS",
    "binary_copy_data",
    "copy_documents",
    "copy_fingerprints",
    "copy_target",
]

# The columns (and their types) of the rows copy_documents takes, in order.
DOCUMENT_COLUMNS = ("id", "key", "fingerprint", "duplicate_of", "meta", "verify_text",
                    "sentence_sig", "sentence_hashes", "body")
_DOCUMENT_TYPES = ["int8", "text", "int8", "int8", "jsonb", "text", "int8", "int8[]", "text"]
_COPY = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY{})")

# The columns copy_fingerprints writes; the others take their defaults.
FINGERPRINT_COLUMNS = ("id", "fingerprint")
CHUNK_ROWS = 1_000_000  # copy_fingerprints' rows per chunk: 26 MB of COPY data
# Binary COPY framing: signature, flags (no OIDs), header extension length;
# the trailer is a field count of -1.
_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
_TRAILER = b"\xff\xff"


def _statement(table: sql.Composable | None, columns: Sequence[str], freeze: bool) -> sql.Composed:
    return _COPY.format(
        table if table is not None else sql.Identifier("simhash_documents"),
        sql.SQL(", ").join(map(sql.Identifier, columns)),
        sql.SQL(", FREEZE" if freeze else ""),
    )


def copy_documents(
    conn: psycopg.Connection[Any],
    rows: Iterable[tuple[Any, ...]],
    *,
    table: sql.Composable | None = None,
    freeze: bool = False,
) -> None:
    """COPY rows of :data:`DOCUMENT_COLUMNS` (meta as ``Jsonb`` or None) into ``table``.

    ``table`` defaults to simhash_documents; ``freeze`` (bulk_load, in the
    transaction that truncated the table) writes the rows frozen.
    """
    with conn.cursor() as cur, cur.copy(_statement(table, DOCUMENT_COLUMNS, freeze)) as copy:
        copy.set_types(_DOCUMENT_TYPES)
        for row in rows:
            copy.write_row(row)


def binary_copy_data(*fields: tuple[npt.DTypeLike, npt.ArrayLike]) -> bytes:
    """Binary COPY data (header, rows, trailer) of fixed-width, non-NULL fields.

    Each field is ``(wire dtype, values)``, one value per row: the dtype is
    the field's binary form, big-endian (``">i8"`` for bigint; for ``bit(64)``
    a structured ``[("bits", ">i4"), ("value", ">u8")]``, its values a
    structured array of that dtype). For example two bigint columns::

        binary_copy_data((">i8", ids), (">i8", signed_fingerprints))
    """
    return _HEADER + _binary_rows(*fields) + _TRAILER


def _binary_rows(*fields: tuple[npt.DTypeLike, npt.ArrayLike]) -> bytes:
    """The rows of :func:`binary_copy_data`, without its header and trailer."""
    dtypes = [np.dtype(dt) for dt, _ in fields]
    layout: list[tuple[str, Any]] = [("count", ">i2")]
    for j, dt in enumerate(dtypes):
        layout += [(f"size{j}", ">i4"), (f"value{j}", dt)]
    n = len(np.asarray(fields[0][1])) if fields else 0
    rows = np.empty(n, dtype=np.dtype(layout))
    rows["count"] = len(fields)
    for j, (dt, (_, values)) in enumerate(zip(dtypes, fields, strict=True)):
        rows[f"size{j}"] = dt.itemsize
        rows[f"value{j}"] = values
    return rows.tobytes()


def copy_fingerprints(
    conn: psycopg.Connection[Any], fps: Any, first_id: int, table: sql.Composable
) -> None:
    """COPY (id, fingerprint) rows of uint64 ``fps``, ids from ``first_id``, frozen.

    bulk_load's fast path. One statement, its data built and sent
    :data:`CHUNK_ROWS` rows at a time: NumPy builds the next chunk while the
    server copies the last, where a statement per chunk left the server idle
    for each chunk's build and the statement's round trip.
    """
    with conn.cursor() as cur, cur.copy(_statement(table, FINGERPRINT_COLUMNS, True)) as copy:
        copy.write(_HEADER)
        for start in range(0, len(fps), CHUNK_ROWS):
            chunk = fps[start : start + CHUNK_ROWS]
            ids = np.arange(first_id + start, first_id + start + len(chunk), dtype=np.int64)
            copy.write(_binary_rows((">i8", ids), (">i8", to_signed_array(chunk))))
        copy.write(_TRAILER)


def copy_target(conn: psycopg.Connection[Any]) -> sql.Composable:
    """Where bulk_load's rows go: the table, or the partition of now() (else the default).

    COPY ... FREEZE is refused on a partitioned table, so bulk_load copies
    into the partition its rows land in (created_at = now(), the
    transaction's start).
    """
    row = conn.execute(
        "SELECT relkind = 'p' FROM pg_class WHERE oid = 'simhash_documents'::regclass"
    ).fetchone()
    if not row or not row[0]:
        return sql.Identifier("simhash_documents")
    part = conn.execute(
        "SELECT p.partition::text FROM simhash_partitions() AS p"
        " WHERE p.is_default OR (now() >= p.lower_bound AND now() < p.upper_bound)"
        " ORDER BY p.is_default LIMIT 1"
    ).fetchone()
    assert part is not None  # the default partition at least
    return sql.SQL(part[0])  # a regclass, quoted by the server
