"""Partition DDL that never stalls the write path (issue 29, item 1).

Dropping or making a partition needs an ACCESS EXCLUSIVE lock on
simhash_documents (or simhash_text_keys). While it waits for one, every
writer queues behind it: an analyst's transaction left idle after a
``SELECT count(*)`` once held every ``add()`` for 21 s through a purge.
``DETACH PARTITION ... CONCURRENTLY`` would not queue writers, but
PostgreSQL refuses it on a table with a default partition, which
simhash_documents has (so that no insert ever fails).

So each step is one short transaction under a short ``lock_timeout``
(:data:`DDL_LOCK_TIMEOUT`): a writer waits at most that long behind it. A
step that times out is rolled back and tried again after a backoff, during
which writers run; after ``lock_wait`` seconds in all it gives up with
:class:`MaintenanceBlockedError`, naming the sessions in the way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import psycopg

from simhash_pg.store import locking

__all__ = [
    "DDL_LOCK_TIMEOUT",
    "DEFAULT_LOCK_WAIT",
    "MaintenanceBlockedError",
    "blockers",
    "run_ddl",
]

_T = TypeVar("_T")

# Seconds one try waits for its lock: also the longest a writer waits behind it.
DDL_LOCK_TIMEOUT = 0.2
# Seconds a purge keeps trying before it reports who is in the way.
DEFAULT_LOCK_WAIT = 60.0

# Sessions holding a lock on the tables partition DDL locks (both partitioned
# tables and their partitions) since before the wait began: any lock there
# conflicts with ACCESS EXCLUSIVE. Oldest transaction first: the one to end.
_BLOCKERS = (
    "SELECT a.pid, a.usename, a.application_name, a.state, a.xact_start, a.query_start,"
    " left(regexp_replace(a.query, '\\s+', ' ', 'g'), 120),"
    " string_agg(DISTINCT l.relation::regclass::text, ', ')"
    " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()"
    " AND l.relation IN (SELECT relid FROM pg_partition_tree('simhash_documents')"
    "  UNION ALL SELECT relid FROM pg_partition_tree('simhash_text_keys'))"
    " AND (a.xact_start IS NULL OR a.xact_start <= %s)"
    " GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY a.xact_start NULLS LAST, a.pid LIMIT 5"
)


class MaintenanceBlockedError(psycopg.errors.LockNotAvailable, TimeoutError):
    """Partition maintenance gave up waiting for its lock; nothing of the step was done.

    The message names the sessions holding locks on the tables since before
    the wait (pid, user, application, state, since when): typically a
    transaction left open. Also a psycopg ``LockNotAvailable`` (55P03).
    """


def blockers(conn: psycopg.Connection[Any], since: datetime) -> str:
    """The sessions holding locks on the partitioned tables since ``since`` ("" if none)."""
    try:
        rows = conn.execute(_BLOCKERS, [since]).fetchall()
    except psycopg.Error:
        return ""
    return "; ".join(
        f"pid {pid} (user {user}, application {app or '-'}, {state or 'unknown state'}"
        + (f", transaction since {xact:%Y-%m-%d %H:%M:%S%z}" if xact else "")
        + (f", last query at {qstart:%H:%M:%S}: {query!r}" if qstart and query else "")
        + f") holds a lock on {rels}"
        for pid, user, app, state, xact, qstart, query, rels in rows
    )


def run_ddl(conn: psycopg.Connection[Any], step: Callable[[], _T], *, what: str,
            lock_wait: float = DEFAULT_LOCK_WAIT,
            lock_timeout: float = DDL_LOCK_TIMEOUT) -> _T:
    """``step()`` in one transaction on ``conn`` (autocommit) under a short lock_timeout.

    Tried again with backoff after a timed-out lock (or a deadlock with a
    writer) until ``lock_wait`` seconds have passed (0: one try), then
    :class:`MaintenanceBlockedError`; ``what`` names the step in its message.
    """
    row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None  # a SELECT of one value gives one row
    started = row[0]
    deadline = time.monotonic() + lock_wait
    tries = 0
    while True:
        tries += 1
        try:
            with conn.transaction():
                conn.execute("SELECT set_config('lock_timeout', %s, true)",
                             [f"{round(lock_timeout * 1000)}ms"])
                return step()
        except (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected) as exc:
            pause = locking.backoff(tries)
            if time.monotonic() + pause >= deadline:
                who = blockers(conn, started)
                raise MaintenanceBlockedError(
                    f"gave up after {tries} tries over {lock_wait:g} s to {what}: "
                    + (f"{who}. " if who else "another session holds a lock on the table. ")
                    + "Writers were not held up. End that transaction (or set "
                    "idle_in_transaction_session_timeout) and run it again."
                ) from exc
            time.sleep(pause)
