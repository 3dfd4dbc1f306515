"""No partition may look empty to the planner while rows can arrive in it.

A partition analyzed while empty (``reltuples = 0``: bulk_load's VACUUM
ANALYZE reaches tomorrow's partition and the default one, and so does an
operator's ANALYZE) is planned as holding no rows. A session's cached plan
of a batch look-up then scans it once per fingerprint, and keeps doing so
after midnight, when every add lands in it, until autovacuum next analyzes
it: measured, one add_many of 5,000 fingerprints in a session that planned
before 20,000 rows reached such a partition took 82 s, against 0.25 s in a
new session (docs/scaling.md, "Writes"). A partition never analyzed
(``reltuples = -1``) is planned as if it held 10 pages, which keeps the
index plans, so :func:`forget_empty_stats` gives an empty partition back
that state (TRUNCATE resets it, PostgreSQL 14+) and analyzes one that has
rows since.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

__all__ = ["forget_empty_stats"]

_ZERO = (
    "SELECT t.relid::regclass::text FROM pg_partition_tree('simhash_documents') AS t"
    " JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf AND c.reltuples = 0"
)


def forget_empty_stats(conn: psycopg.Connection[Any], lock_timeout_ms: int = 200) -> list[str]:
    """Reset the planner's stats of each leaf partition that records 0 rows; its names.

    An empty one is truncated under its own lock (waiting at most
    ``lock_timeout_ms``, else left for the next run); one that has rows is
    analyzed. Needs a connection in autocommit mode; a role that does not
    own the table changes nothing.
    """
    done: list[str] = []
    for (rel,) in conn.execute(_ZERO).fetchall():
        name = sql.SQL(rel)  # regclass text: already quoted where needed
        try:
            with conn.transaction():
                conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(
                    sql.Literal(f"{lock_timeout_ms}ms")))
                conn.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(name))
                got = conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(name))
                empty = got.fetchone() == (False,)
                if empty:
                    conn.execute(sql.SQL("TRUNCATE {}").format(name))
            if not empty:
                conn.execute(sql.SQL("ANALYZE {}").format(name))
        except (psycopg.errors.LockNotAvailable, psycopg.errors.InsufficientPrivilege):
            continue
        done.append(rel)
    return done
