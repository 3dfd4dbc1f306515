"""A store's options, checked once, in one object.

:class:`StoreOptions` holds what a caller chooses about reads and writes
(everything but where the database is and how it is opened); building one
checks every field, so a store, ``serve``'s settings and a pooled store per
request share one checked value instead of checking again.

:class:`WriterHooks` are not options: the lock-pricing benchmark (lab/bench/
stream.py) and the load test that proves the probe locks matter switch
parts of the write path off through a subclass that sets
``SimhashStore.writer_hooks`` (lab/bench/hooks.py). Users never see them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from simhash_pg.bits import DEFAULT_K
from simhash_pg.store import locking, sql
from simhash_pg.store.checks import (
    check_k,
    check_lock_timeout,
    check_on_duplicate,
    check_partition_interval,
    check_retention,
    check_verify,
)
from simhash_pg.store.results import OnDuplicate
from simhash_pg.store.retention import PartitionInterval
from simhash_pg.verify.modes import VerifyMode

__all__ = ["StoreOptions", "WriterHooks"]


@dataclass(frozen=True)
class StoreOptions:
    """What :class:`~simhash_pg.store.SimhashStore` takes besides the database (its
    docstring describes each); a wrong value is a ValueError naming it."""

    k: int = DEFAULT_K
    on_duplicate: OnDuplicate = "skip"
    lock_batches: bool = True
    lock_timeout: float | None = locking.DEFAULT_LOCK_TIMEOUT
    retention: timedelta | None = None
    partition_interval: PartitionInterval | None = None
    verify: VerifyMode | None = None
    keep_text: bool = True

    def __post_init__(self) -> None:
        check_k(self.k)
        check_on_duplicate(self.on_duplicate)
        for name in ("lock_batches", "keep_text"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        check_lock_timeout(self.lock_timeout)
        check_retention(self.retention)
        check_partition_interval(self.partition_interval)
        check_verify(self.verify)


@dataclass(frozen=True)
class WriterHooks:
    """Parts of the write path a measurement may switch off (never a user)."""

    # the SQL function add() calls (simhash_add's signature): the stream
    # benchmark names its own copy without the writers' locks
    add_function: str = "simhash_add"
    # locked add_many batches take per-block locks, not the store-wide one
    pigeonhole_batches: bool = True
    # probed texts also lock their probe values, not only their own blocks
    probe_locks: bool = True

    def __post_init__(self) -> None:
        sql.add_statement(self.add_function)  # a plain SQL name, or a ValueError
