"""bulk_load: fill an empty store fast, without near-duplicate checks.

One transaction: TRUNCATE (so COPY can FREEZE the rows and set the
visibility map: index-only scans from the first query; on the partitioned
table, COPY goes into the partition of today), drop the primary key, the
foreign key and the secondary indexes, COPY everything (store/pgcopy.py),
rebuild them as they were, then VACUUM (ANALYZE).

A load of a fingerprint array writes only ids and fingerprints, so the
partial indexes on ``col IS NOT NULL`` of the other columns stay empty: they
are kept through its COPY (a NULL test per row and index) instead of being
rebuilt by a heap scan each, and the insert triggers that fire only for rows
with a key or a link are off during it. At 50M rows the load went from 337k
to 387-398k rows/s, and to 470k with the builds' sort memory below
(docs/benchmarks.md, "Bulk load").
"""

from __future__ import annotations

import re
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
from simhash_pg.store.pgcopy import (
    FINGERPRINT_COLUMNS,
    copy_documents,
    copy_fingerprints,
    copy_target,
)
from simhash_pg.store.planner_stats import forget_empty_stats
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify import VerifyPolicy, VText

__all__ = ["bulk_load"]

_CONSTRAINTS = (
    "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE conrelid = 'simhash_documents'::regclass AND contype IN ('f', 'p')"
    " ORDER BY contype"  # f before p: the foreign key depends on the primary key
)
_INDEXES = (
    "SELECT i.relname, pg_get_indexdef(x.indexrelid), pg_get_expr(x.indpred, x.indrelid)"
    " FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
    " WHERE x.indrelid = 'simhash_documents'::regclass AND NOT x.indisprimary"
)
# What an array load's rows hold: copy_fingerprints' columns, created_at by
# its default and the generated blocks. A partial index on "other IS NOT
# NULL" gets no entry from it.
_ARRAY_COLUMNS = frozenset({*FINGERPRINT_COLUMNS, "created_at", "b0", "b1", "b2", "b3"})
_NOT_NULL = re.compile(r"\((\w+) IS NOT NULL\)")
# Insert triggers WHEN (NEW.key IS NOT NULL) / (NEW.duplicate_of IS NOT NULL) /
# (NEW.sentence_hashes IS NOT NULL):
# nothing to do for an array load's rows, and a WHEN test per row to skip.
_KEYED_ROW_TRIGGERS = ("simhash_keys_insert", "simhash_links_insert", "simhash_text_keys_insert")
_ADD_CONSTRAINT = sql.SQL("ALTER TABLE simhash_documents ADD CONSTRAINT {} {}")
# Sort memory for the index builds, for this transaction: 32 MB for each
# participant of a parallel build (the least PostgreSQL gives one). Sorting
# in runs of that size and merging them beat sorting everything in memory,
# by measurement: at 50M rows, with the large store's 1.5 GB the primary key
# took 12-16 s and each block index 21-24 s, with 128 MB 7.4 s and 18-20 s
# (docs/benchmarks.md, "Bulk load").
_BUILD_MEMORY = (
    "SELECT set_config('maintenance_work_mem', 32 * (1 + current_setting("
    "'max_parallel_maintenance_workers')::integer) || 'MB', true)"
)


def bulk_load(
    conn: psycopg.Connection[Any],
    docs: Iterable[Any],
    fingerprinter: Fingerprinter,
    policy: VerifyPolicy,
    *,
    batch_size: int,
    workers: int | None,
    timings: dict[str, float] | None = None,
    keep_text: bool = True,
) -> int:
    """Load ``docs`` into the empty table of ``conn``; return the rows loaded.

    Texts are checked and fingerprinted as add_many does them, and a row
    keeps for verification what add() would keep (the store's ``policy``),
    and its body (the text as written) with ``keep_text``.
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
        array = isinstance(docs, np.ndarray)
        constraints, indexdefs = _drop_keys_and_indexes(conn, keep_empty=array)
        if array:
            _set_triggers(conn, "DISABLE")
        clock = time.perf_counter()
        if array:  # fingerprints already as uint64: no per-item checks needed
            fps = np.ascontiguousarray(docs, dtype=np.uint64)
            copy_fingerprints(conn, fps, 1, target)
            loaded = len(fps)
        else:
            loaded = _copy_all(conn, docs, target, batch_size,
                               lambda batch: prepare(batch, fingerprinter, policy, workers,
                                                     probes=False, keep_text=keep_text),
                               policy.stored_fields)
        if loaded:
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('simhash_documents', 'id'), %s)",
                [loaded],
            )
        phase = {"copy": time.perf_counter() - clock}
        if array:
            _set_triggers(conn, "ENABLE")
        clock = time.perf_counter()
        conn.execute(_BUILD_MEMORY)
        builds = _rebuild(conn, constraints, indexdefs)
        phase["index builds"] = time.perf_counter() - clock
        phase.update((f"build {name}", sec) for name, sec in builds.items())
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


def _set_triggers(conn: psycopg.Connection[Any], how: str) -> None:
    """ENABLE or DISABLE the keyed-row insert triggers (on every partition)."""
    for name in _KEYED_ROW_TRIGGERS:
        conn.execute(sql.SQL("ALTER TABLE simhash_documents {} TRIGGER {}").format(
            sql.SQL(how), sql.Identifier(name)))


def _stays_empty(predicate: str | None) -> bool:
    """Whether a partial index with this predicate gets no entry from an array load."""
    m = _NOT_NULL.fullmatch(predicate or "")
    return m is not None and m.group(1) not in _ARRAY_COLUMNS


def _drop_keys_and_indexes(
    conn: psycopg.Connection[Any], *, keep_empty: bool = False,
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """Drop what would slow the COPY; return how to build it again.

    Constraints too: the primary key is built faster afterwards, and the
    duplicate_of foreign key would queue a trigger event per row. With
    ``keep_empty`` (an array load), the partial indexes it leaves empty stay.
    """
    constraints = conn.execute(_CONSTRAINTS).fetchall()
    for name, _, _ in constraints:
        conn.execute(sql.SQL("ALTER TABLE simhash_documents DROP CONSTRAINT {}").format(
            sql.Identifier(name)))
    indexdefs = [(r[0], r[1]) for r in conn.execute(_INDEXES)
                 if not (keep_empty and _stays_empty(r[2]))]
    for name, _ in indexdefs:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    # a partitioned table's index is defined ON ONLY the parent; built
    # again without ONLY, it is built on every partition
    return constraints, [(name, ddl.replace(" ON ONLY ", " ON ", 1)) for name, ddl in indexdefs]


def _rebuild(conn: psycopg.Connection[Any], constraints: list[tuple[str, str, str]],
             indexdefs: list[tuple[str, str]]) -> dict[str, float]:
    """The primary key, then the indexes, then the foreign key that needs the key.

    Returns the seconds each took, by name (without the table's prefix).
    """
    took: dict[str, float] = {}

    def run(name: str, statement: Any) -> None:
        clock = time.perf_counter()
        conn.execute(statement)
        took[name.removeprefix("simhash_documents_")] = time.perf_counter() - clock

    for name, kind, ddl in reversed(constraints):
        if kind == "p":
            run(name, _ADD_CONSTRAINT.format(sql.Identifier(name), sql.SQL(ddl)))
    for name, ddl in indexdefs:
        run(name, ddl)
    for name, kind, ddl in constraints:
        if kind == "f":
            run(name, _ADD_CONSTRAINT.format(sql.Identifier(name), sql.SQL(ddl)))
    return took


def _copy_all(
    conn: psycopg.Connection[Any],
    docs: Iterable[Any],
    target: sql.Composable,
    batch_size: int,
    prepare_batch: Callable[[list[Any]], Prepared],
    stored_fields: Callable[[VText | None], tuple[str | None, int | None, list[int] | None]],
) -> int:
    """COPY every input (not an array: bulk_load copies that whole), ids from 1; the
    number of rows."""
    next_id = 1
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
             *stored_fields(p.vtexts.get(i)), p.bodies.get(i))
            for i, (fp, key, meta) in enumerate(p.items)
        )
        copy_documents(conn, rows, table=target, freeze=True)
        next_id += len(p.items)
    return next_id - 1
