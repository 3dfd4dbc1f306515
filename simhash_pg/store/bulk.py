"""bulk_load: fill an empty store fast, without near-duplicate checks.

One transaction: TRUNCATE (so COPY can FREEZE the rows and set the
visibility map: index-only scans from the first query; on the partitioned
table, COPY goes into the partition of today), drop the primary key, the
foreign key and the secondary indexes, COPY everything (store/pgcopy.py),
rebuild them as they were, then VACUUM (ANALYZE).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from simhash_pg.bits import check_fingerprint, to_signed
from simhash_pg.store.batch import Prepared, prepare
from simhash_pg.store.pgcopy import copy_documents, copy_fingerprints, copy_target
from simhash_pg.store.planner_stats import forget_empty_stats
from simhash_pg.verify import VerifyPolicy, VText

__all__ = ["bulk_load"]

_CONSTRAINTS = (
    "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE conrelid = 'simhash_documents'::regclass AND contype IN ('f', 'p')"
    " ORDER BY contype"  # f before p: the foreign key depends on the primary key
)
_INDEXES = (
    "SELECT i.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x"
    " JOIN pg_class i ON i.oid = x.indexrelid"
    " WHERE x.indrelid = 'simhash_documents'::regclass AND NOT x.indisprimary"
)
_ADD_CONSTRAINT = sql.SQL("ALTER TABLE simhash_documents ADD CONSTRAINT {} {}")
_NUMPY_CHUNK = 1_000_000


def bulk_load(
    conn: psycopg.Connection[Any],
    docs: Iterable[Any],
    fingerprinter: Any,
    policy: VerifyPolicy,
    *,
    batch_size: int,
    workers: int | None,
    timings: dict[str, float] | None = None,
) -> int:
    """Load ``docs`` into the empty table of ``conn``; return the rows loaded.

    Texts are checked and fingerprinted as add_many does them, and a row
    keeps for verification what add() would keep (the store's ``policy``).
    """
    loaded = 0
    with conn.transaction():
        conn.execute("LOCK TABLE simhash_documents IN ACCESS EXCLUSIVE MODE")
        if conn.execute("SELECT EXISTS (SELECT 1 FROM simhash_documents)").fetchone() != (
            False,
        ):
            raise ValueError("bulk_load needs an empty store; use add_many instead")
        conn.execute("TRUNCATE simhash_documents RESTART IDENTITY")
        target = copy_target(conn)
        constraints, indexdefs = _drop_keys_and_indexes(conn)
        clock = time.perf_counter()
        loaded = _copy_all(conn, docs, target, batch_size,
                           lambda batch: prepare(batch, fingerprinter, policy, workers,
                                                 probes=False),
                           policy.stored_fields)
        if loaded:
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('simhash_documents', 'id'), %s)",
                [loaded],
            )
        phase = {"copy": time.perf_counter() - clock}
        clock = time.perf_counter()
        _rebuild(conn, constraints, indexdefs)
        phase["index builds"] = time.perf_counter() - clock
        clock = time.perf_counter()
    # COPY FREEZE set the visibility map already (PG 14+); VACUUM finds
    # little to do but makes sure of it, and ANALYZE gives the planner stats.
    conn.execute("VACUUM (ANALYZE) simhash_documents")
    # which left tomorrow's and the default partition recorded as empty
    forget_empty_stats(conn)
    phase["vacuum analyze"] = time.perf_counter() - clock
    if timings is not None:
        timings.update(phase)
    return loaded


def _drop_keys_and_indexes(
    conn: psycopg.Connection[Any],
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """Drop what would slow the COPY; return how to build it again.

    Constraints too: the primary key is built faster afterwards, and the
    duplicate_of foreign key would queue a trigger event per row.
    """
    constraints = conn.execute(_CONSTRAINTS).fetchall()
    for name, _, _ in constraints:
        conn.execute(sql.SQL("ALTER TABLE simhash_documents DROP CONSTRAINT {}").format(
            sql.Identifier(name)))
    indexdefs = [(r[0], r[1]) for r in conn.execute(_INDEXES)]
    for name, _ in indexdefs:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    # a partitioned table's index is defined ON ONLY the parent; built
    # again without ONLY, it is built on every partition
    return constraints, [(name, ddl.replace(" ON ONLY ", " ON ", 1)) for name, ddl in indexdefs]


def _rebuild(conn: psycopg.Connection[Any], constraints: list[tuple[str, str, str]],
             indexdefs: list[tuple[str, str]]) -> None:
    """The primary key, then the indexes, then the foreign key that needs the key."""
    for name, kind, ddl in reversed(constraints):
        if kind == "p":
            conn.execute(_ADD_CONSTRAINT.format(sql.Identifier(name), sql.SQL(ddl)))
    for _, ddl in indexdefs:
        conn.execute(ddl)
    for name, kind, ddl in constraints:
        if kind == "f":
            conn.execute(_ADD_CONSTRAINT.format(sql.Identifier(name), sql.SQL(ddl)))


def _copy_all(
    conn: psycopg.Connection[Any],
    docs: Iterable[Any],
    target: sql.Composable,
    batch_size: int,
    prepare_batch: Callable[[list[Any]], Prepared],
    stored_fields: Callable[[VText | None], tuple[str | None, int | None, list[int] | None]],
) -> int:
    """COPY every input, ids from 1; the number of rows."""
    next_id = 1
    if isinstance(docs, np.ndarray):
        # fingerprints already as uint64: no per-item checks needed
        fps_all = np.ascontiguousarray(docs, dtype=np.uint64)
        for start in range(0, len(fps_all), _NUMPY_CHUNK):
            chunk = fps_all[start : start + _NUMPY_CHUNK]
            copy_fingerprints(conn, chunk, next_id, target)
            next_id += len(chunk)
        docs = ()
    it = iter(docs)
    while batch := list(islice(it, batch_size)):
        if all(isinstance(d, int) and not isinstance(d, bool) for d in batch):
            fps = np.array([check_fingerprint(d) for d in batch], dtype=np.uint64)
            copy_fingerprints(conn, fps, next_id, target)
            next_id += len(batch)
            continue
        p = prepare_batch(batch)
        bad = [e for e in p.errors if e is not None]
        if bad:
            raise ValueError(f"bulk_load: {bad[0].error}")
        rows = (
            # what the row keeps for verification, as add() would
            (next_id + i, key, to_signed(fp), None, Jsonb(meta) if meta is not None else None,
             *stored_fields(p.vtexts.get(i)))
            for i, (fp, key, meta) in enumerate(p.items)
        )
        copy_documents(conn, rows, table=target, freeze=True)
        next_id += len(p.items)
    return next_id - 1
