"""Read a store into PostgreSQL's cache: after a restart, a bulk load or a failover.

Shared buffers start empty, and until a look-up's pages are in them each
page comes from the OS cache or the disk. A text query reads the block
indexes, the key table and its index, and the rows it finds: at 3M title
rows ``near()`` took 2.35 ms p50 with the key table unread against 1.95 ms
after reading it (docs/benchmarks.md, "The benches' warm-up reads the key
table").

:func:`warm_plan` is the one rule of what to read and in which order, which
``SimhashStore.warm()``, ``simhash-pg warm`` and every benchmark's warm-up
follow. The relations, by priority (highest first):

1. the block indexes: every look-up descends them;
2. the key table's index: every text query with keys;
3. the documents' other indexes (primary key, signature, key) and the caller
   keys' table and index: a found row is read back through them;
4. the key table's rows (a popular key's holders are ranked by them);
5. the documents' rows.

What fits in shared buffers (:data:`BUDGET_SHARE` of them, highest priority
first; a relation that does not fit is skipped whole, a smaller one after it
may still fit) is read, the lowest priority first, so that the block
indexes are the last pages read when something else claims buffers too.
``everything=True`` reads every relation in that order, whatever its size:
the benchmarks' warm-up, which wants the OS cache to hold what the buffers
cannot.

The reading is ``pg_prewarm`` (contrib), created in the ``public`` schema
when this role may; otherwise :class:`WarmError` says what to ask for.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

__all__ = ["BUDGET_SHARE", "Relation", "WarmError", "Warmed", "warm", "warm_plan"]

# Of shared_buffers, what a warm-up may fill: the rest stays for what the
# server reads meanwhile (catalogs, other databases, the first queries).
BUDGET_SHARE = 0.9

# A block index: (b_i, b_(i+1), fingerprint), named by revision 0004.
_BLOCK_INDEX = re.compile(r"_b[0-3]_b[0-3]_")

# Every leaf (partitions; a partitioned table or index has no storage) of the
# store's tables and of their indexes, with its size.
_RELATIONS = (
    "SELECT t.relid::regclass::text, w.name, r.is_index, pg_relation_size(t.relid)"
    " FROM (VALUES ('simhash_documents'), ('simhash_text_keys'), ('simhash_keys')) AS w (name)"
    " JOIN pg_class c ON c.oid = to_regclass(w.name)"
    " CROSS JOIN LATERAL (SELECT c.oid AS relid, false AS is_index"
    "  UNION ALL SELECT i.indexrelid, true FROM pg_index i WHERE i.indrelid = c.oid) AS r"
    " CROSS JOIN LATERAL (SELECT r.relid UNION SELECT p.relid"
    "  FROM pg_partition_tree(r.relid) AS p WHERE p.isleaf) AS t"
    " WHERE (SELECT x.relkind IN ('r', 'i') FROM pg_class x WHERE x.oid = t.relid)"
)
_PREWARM_SCHEMA = ("SELECT n.nspname FROM pg_extension e"
                   " JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_prewarm'")


class WarmError(RuntimeError):
    """The store cannot be read into the cache here (pg_prewarm missing); says what to do."""


@dataclass(frozen=True)
class Relation:
    """One table or index partition, as :func:`warm_plan` ranks it."""

    name: str  # as regclass prints it (schema-qualified when off the search path)
    bytes: int
    priority: int  # 1 (the block indexes) .. 5 (the documents' rows): module docstring
    read: bool  # within the budget (or everything asked for)


@dataclass(frozen=True)
class Warmed:
    """What :func:`warm` read: the plan in reading order, and how long it took."""

    relations: list[Relation]
    seconds: float
    shared_buffers_bytes: int

    @property
    def read(self) -> list[Relation]:
        return [r for r in self.relations if r.read]

    @property
    def left(self) -> list[Relation]:
        """Relations left unread: they did not fit in the budget."""
        return [r for r in self.relations if not r.read]

    @property
    def bytes_read(self) -> int:
        return sum(r.bytes for r in self.read)


def _priority(table: str, is_index: bool, name: str) -> int:
    if is_index:
        if table == "simhash_documents" and _BLOCK_INDEX.search(name):
            return 1
        return 2 if table == "simhash_text_keys" else 3
    return {"simhash_text_keys": 4, "simhash_keys": 3}.get(table, 5)


def warm_plan(conn: psycopg.Connection[Any], *, everything: bool = False,
              budget: int | None = None) -> list[Relation]:
    """The store's relations in the order :func:`warm` reads them, each marked whether
    it will be read: the module's rule. ``budget``: bytes (default
    :data:`BUDGET_SHARE` of shared_buffers); ``everything``: no budget.
    """
    rows = conn.execute(_RELATIONS).fetchall()
    if budget is None:
        budget = int(_shared_buffers(conn) * BUDGET_SHARE)
    ranked = sorted(((_priority(table, is_index, name), name, int(size))
                     for name, table, is_index, size in rows),
                    key=lambda r: (r[0], r[1]))
    chosen: list[Relation] = []
    room = budget
    for priority, name, size in ranked:
        fits = everything or size <= room
        if fits and not everything:
            room -= size
        chosen.append(Relation(name, size, priority, fits))
    # read the lowest priority first: the block indexes are read last
    return sorted(chosen, key=lambda r: (-r.priority, r.name))


def _shared_buffers(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))").fetchone()
    assert row is not None
    return int(row[0])


def _prewarm_function(conn: psycopg.Connection[Any]) -> sql.Composable:
    """pg_prewarm, qualified by its schema; created in public if this role may."""
    row = conn.execute(_PREWARM_SCHEMA).fetchone()
    if row is None:
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm SCHEMA public")
        except psycopg.Error as exc:
            raise WarmError(
                "reading the store into the cache needs the pg_prewarm extension, and "
                f"this role could not create it ({exc.diag.message_primary or exc}); ask "
                "the server's administrator to run CREATE EXTENSION pg_prewarm in this "
                "database (it ships with PostgreSQL's contrib modules)") from None
        row = conn.execute(_PREWARM_SCHEMA).fetchone()
        assert row is not None
    return sql.SQL("{}.pg_prewarm").format(sql.Identifier(row[0]))


def warm(conn: psycopg.Connection[Any], *, everything: bool = False,
         budget: int | None = None) -> Warmed:
    """Read the store's relations into shared buffers by :func:`warm_plan`'s rule."""
    started = time.perf_counter()
    shared = _shared_buffers(conn)  # once: the budget's base and the report's
    if budget is None:
        budget = int(shared * BUDGET_SHARE)
    plan = warm_plan(conn, everything=everything, budget=budget)
    func = _prewarm_function(conn)
    query = sql.SQL("SELECT {}(%s::regclass)").format(func)
    for rel in plan:
        if rel.read:
            try:
                conn.execute(query, [rel.name])
            except psycopg.errors.InsufficientPrivilege as exc:
                # pg_prewarm asks for SELECT on the relation itself: an index's is its owner's
                raise WarmError(f"this role may not read {rel.name} into the cache "
                                f"({exc.diag.message_primary}); run it as the store's "
                                "owner") from None
    return Warmed(plan, time.perf_counter() - started, shared)
