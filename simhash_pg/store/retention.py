"""Retention: drop documents older than a window (e.g. the last two days).

``purge(conn, older_than)`` removes the documents whose ``created_at`` is
before the cutoff. Since revision 0005 the table is partitioned by UTC day
(sql/0005_partitions.sql), since 0013 by the store's interval (day, week or
month), and a purge

1. makes the partitions holding today and the next ``DAYS_AHEAD`` days if
   missing (``simhash_ensure_partitions``), so that a daily purge also keeps
   them ahead;
2. drops every partition that lies wholly before the cutoff, and deletes the
   default partition's old rows (``simhash_drop_partitions``, one short
   transaction per partition): no dead rows, the space goes back to the
   system at once;
3. deletes what is left before the cutoff (the rows of the one partition
   that is only partly old) in batches of ``batch_size`` rows with a commit
   after each: short transactions keep locks brief and let concurrent adds
   and searches run on.

Step 3 is for daily partitions (a day's part at most). Under weekly or
monthly ones it would delete up to a week or month of rows row by row, every
day, so by default it does not run there (``whole_partitions``): the old rows
go with their partition, a whole interval at a time, and a document is kept
at least the retention window and less than the window plus one interval.
On a plain table (before 0005) only step 3 runs.

Steps 1 and 2 wait for their locks under a short ``lock_timeout``, tried
again with backoff (:mod:`simhash_pg.store.maintenance`): a session that
holds the table (an analyst's open transaction) delays the purge, never
the writers queued behind its lock request.

The cutoff is computed by the server (``now() - older_than``) so that client
clock skew cannot purge too much; a ``datetime`` cutoff is taken as given.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal

import psycopg

from simhash_pg.store import locking
from simhash_pg.store.maintenance import DEFAULT_LOCK_WAIT, run_ddl
from simhash_pg.store.planner_stats import forget_empty_stats

__all__ = [
    "DEFAULT_PURGE_BATCH",
    "PARTITION_INTERVALS",
    "PartitionInterval",
    "PurgeResult",
    "parse_age",
    "purge",
    "purge_candidates",
    "whole_partitions_by_default",
    "whole_partitions_for",
]

DEFAULT_PURGE_BATCH = 20_000

# How long one partition of simhash_documents spans (revision 0013,
# sql/current/partitions.sql); recorded per store in simhash_meta.
PartitionInterval = Literal["day", "week", "month"]
PARTITION_INTERVALS: tuple[PartitionInterval, ...] = ("day", "week", "month")

_UNITS = {
    "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}
_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", re.IGNORECASE)


def parse_age(text: str) -> timedelta:
    """'2d', '36h', '90m', '1w', '1d12h', '2 days' -> a timedelta (> 0)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("an age is a number with a unit, e.g. 2d, 36h, 90m, 1w")
    total = 0.0
    pos = 0
    for m in _AGE.finditer(text):
        if m.start() != pos:
            break
        unit = _UNITS.get(m.group(2).lower())
        if unit is None:
            raise ValueError(
                f"unknown unit {m.group(2)!r} in age {text!r}: use s, m, h, d or w"
            )
        total += float(m.group(1)) * unit
        pos = m.end()
    if pos != len(text) or total <= 0:
        raise ValueError(f"not an age: {text!r} (a number with a unit, e.g. 2d, 36h, 90m, 1w)")
    return timedelta(seconds=total)


def _check_older_than(older_than: object) -> timedelta | datetime:
    if isinstance(older_than, str):
        return parse_age(older_than)
    if isinstance(older_than, timedelta):
        if older_than < timedelta(0):
            raise ValueError(f"older_than must not be negative, got {older_than}")
        return older_than
    if isinstance(older_than, datetime):
        if older_than.tzinfo is None:
            raise ValueError("a cutoff datetime must be timezone-aware (created_at is timestamptz)")
        return older_than
    raise TypeError(
        "older_than must be a timedelta (an age), an aware datetime (a cutoff) or a str "
        f"like '2d', got {type(older_than).__name__}"
    )


@dataclass(frozen=True)
class PurgeResult:
    """What a purge did: the cutoff used, rows deleted, batches, seconds.

    ``deleted`` counts every row removed, ``dropped`` names the partitions
    dropped whole (their rows are in ``deleted``), ``batches`` the batched
    DELETEs.
    """

    cutoff: datetime
    deleted: int
    batches: int
    seconds: float
    dropped: tuple[str, ...] = ()


def _cutoff(conn: psycopg.Connection[Any], older_than: timedelta | datetime) -> datetime:
    if isinstance(older_than, datetime):
        return older_than
    row = conn.execute("SELECT now() - %s::interval", [older_than]).fetchone()
    assert row is not None  # a SELECT of one value gives one row
    cutoff: datetime = row[0]
    return cutoff


# Oldest ids first: rows are appended in time order, so the primary key index
# finds them at its start and each batch stops after batch_size matches.
# (id, created_at): the primary key of the partitioned table.
_PURGE_BATCH = (
    "DELETE FROM simhash_documents WHERE (id, created_at) IN ("
    " SELECT id, created_at FROM simhash_documents WHERE created_at < %s"
    " ORDER BY id LIMIT %s)"
)
_PARTITIONED = "SELECT relkind = 'p' FROM pg_class WHERE oid = 'simhash_documents'::regclass"
# older_than = now() - cutoff: the function's own now() - older_than is the
# cutoff exactly (one statement, one now())
_DROP = (
    "SELECT action, relation, n_rows FROM simhash_drop_partitions(now() - %s::timestamptz)"
)
# Partitions are made to hold today and the next DAYS_AHEAD days, by every
# purge and by a store with retention on open; a row no partition holds waits
# in the default partition until one does, so no insert ever fails. One day,
# not two (before revision 0013): each empty partition costs every search
# its index descents (simhash_near k = 3 p50 at 10M rows: 0.176 ms with 2
# days ahead, 0.161 with 1, 0.128 with today's partition alone; docs/scaling.md,
# "near() end to end"). A purge or an open at least once a UTC day (the
# schedule docs/operations.md asks for) makes tomorrow's partition in time.
DAYS_AHEAD = 1
_COUNT = "SELECT count(*) FROM simhash_documents WHERE created_at < %s"
# what whole-partition purges delete: the partitions wholly before the
# cutoff, and the default partition's rows before it
_COUNT_WHOLE = (
    "SELECT count(*) FROM simhash_documents d JOIN simhash_partitions() p"
    " ON p.partition = d.tableoid WHERE CASE WHEN p.is_default THEN d.created_at < %s"
    " ELSE p.upper_bound <= %s END"
)
_INTERVAL = "SELECT simhash_partition_interval()"
# simhash_drop_partitions's steps, one partition each (the oldest first), so
# that no transaction holds the table's lock for more than one: the upper
# bounds of the partitions before the cutoff, then the cutoff itself
_DROP_STEPS = (
    "SELECT upper_bound FROM simhash_partitions()"
    " WHERE NOT is_default AND upper_bound < %s ORDER BY upper_bound"
)


def _drop_before(conn: psycopg.Connection[Any], bound: datetime) -> list[tuple[str, str, Any]]:
    rows: list[tuple[str, str, Any]] = conn.execute(_DROP, [bound]).fetchall()
    return rows


def whole_partitions_for(interval: str) -> bool:
    """Whether a purge under ``interval`` partitions keeps the rows of a partly old
    one by default: under weekly and monthly ones (module docstring)."""
    return interval != "day"


def whole_partitions_by_default(conn: psycopg.Connection[Any],
                                partitioned: bool | None = None) -> bool:
    """:func:`whole_partitions_for` the recorded interval (revision 0013); False on
    a plain table. ``partitioned``: already known by the caller."""
    if partitioned is None:
        row = conn.execute(_PARTITIONED).fetchone()
        partitioned = row is not None and bool(row[0])
    if not partitioned:
        return False
    try:
        got = conn.execute(_INTERVAL).fetchone()
    except psycopg.errors.UndefinedFunction:  # before revision 0013: daily
        return False
    return got is not None and whole_partitions_for(got[0])


def _delete_batch(conn: psycopg.Connection[Any], cutoff: datetime, batch_size: int) -> int:
    """One batched DELETE (its own transaction), rerun with backoff after a deadlock.

    A writer linking to a row of the batch holds that row (FOR KEY SHARE,
    sql/0008_writer_locks.sql) until it commits; two such holds taken in the
    other order than the DELETE's can deadlock, and the server then cancels
    one of the two: the writer reruns its add, the purge its batch.
    """
    for attempt in range(1, 8):
        try:
            n: int = conn.execute(_PURGE_BATCH, [cutoff, batch_size], prepare=True).rowcount
            return n
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
            if attempt == 7 or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                raise
            time.sleep(locking.backoff(attempt))
    raise AssertionError("unreachable")


def purge_candidates(conn: psycopg.Connection[Any], older_than: timedelta | datetime | str, *,
                     whole_partitions: bool | None = None) -> tuple[datetime, int]:
    """The cutoff and how many rows a purge would delete now (for --dry-run)."""
    cutoff = _cutoff(conn, _check_older_than(older_than))
    if whole_partitions is None:
        whole_partitions = whole_partitions_by_default(conn)
    if whole_partitions:
        row = conn.execute(_COUNT_WHOLE, [cutoff, cutoff]).fetchone()
    else:
        row = conn.execute(_COUNT, [cutoff]).fetchone()
    assert row is not None  # a count gives one row
    return cutoff, int(row[0])


def purge(
    conn: psycopg.Connection[Any],
    older_than: timedelta | datetime | str,
    *,
    batch_size: int = DEFAULT_PURGE_BATCH,
    progress: Callable[[int], None] | None = None,
    max_seconds: float | None = None,
    whole_partitions: bool | None = None,
    lock_wait: float = DEFAULT_LOCK_WAIT,
) -> PurgeResult:
    """Delete documents created before ``now() - older_than`` (or before a datetime).

    ``conn`` is a psycopg connection in autocommit mode (``store.connection``):
    every batch commits on its own. ``progress(total_deleted)`` is called
    after each batch. ``max_seconds`` stops after the batch that crosses it
    (a scheduled purge then finishes on its next run). Rows that recorded a
    row deleted by DELETE as ``duplicate_of`` keep their place with NULL
    there, also when they were added during the purge (revision 0008); links
    to the rows of a dropped partition stay as they were (the row they name
    is gone: LEFT JOIN). ``whole_partitions``: only drop whole partitions
    (and the default partition's old rows), no batched DELETE of a partition
    partly old; None: so under weekly or monthly partitions, not daily ones.
    ``lock_wait``: seconds each partition step keeps trying for their locks
    before :class:`~simhash_pg.store.maintenance.MaintenanceBlockedError`
    (what was dropped by then stays dropped).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if not getattr(conn, "autocommit", True):
        raise ValueError("purge needs a connection in autocommit mode (one commit per batch)")
    start = time.perf_counter()
    cutoff = _cutoff(conn, _check_older_than(older_than))
    deleted = batches = 0
    dropped: list[str] = []
    row = conn.execute(_PARTITIONED).fetchone()
    partitioned = row is not None and bool(row[0])
    if whole_partitions is None:
        whole_partitions = whole_partitions_by_default(conn, partitioned)
    if partitioned:
        try:
            run_ddl(conn, lambda: conn.execute("SELECT simhash_ensure_partitions(%s)",
                                               [DAYS_AHEAD]).fetchall(),
                    what="make the next partitions", lock_wait=lock_wait)
            bounds = [b for (b,) in conn.execute(_DROP_STEPS, [cutoff]).fetchall()]
            steps = []
            for bound in [*bounds, cutoff]:
                steps += run_ddl(conn, partial(_drop_before, conn, bound),
                                 what=f"drop the partitions before {bound:%Y-%m-%d %H:%M}",
                                 lock_wait=lock_wait)
            forget_empty_stats(conn)
        except psycopg.errors.InsufficientPrivilege:
            # not the table's owner (a writer role): the batched DELETE below
            # still does the whole purge, without the partition drops
            steps = []
        for action, relation, n in steps:
            if action == "drop":
                dropped.append(relation)
            if action in ("drop", "delete"):
                deleted += n
        if progress is not None:
            progress(deleted)
        if whole_partitions and steps:
            return PurgeResult(cutoff, deleted, 0, time.perf_counter() - start, tuple(dropped))
    while True:
        n = _delete_batch(conn, cutoff, batch_size)
        deleted += max(n, 0)
        batches += 1
        if progress is not None:
            progress(deleted)
        if n < batch_size:
            break
        if max_seconds is not None and time.perf_counter() - start >= max_seconds:
            break
    return PurgeResult(cutoff, deleted, batches, time.perf_counter() - start, tuple(dropped))
