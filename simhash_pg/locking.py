"""Pigeonhole advisory locks: concurrent writers never store two near-duplicates.

Two fingerprints within Hamming distance 3 share at least one whole 16-bit
block. A writer that is about to check-and-insert a fingerprint first takes a
transaction-level advisory lock on each (block number, block value) pair of
it, so any two writers that could store near-duplicates of each other share a
lock, and the second one checks only after the first has committed.

The protocol (keys are pairs of int4; see ``simhash_add`` in sql/):

- the store-wide lock ``(1397246980, 0)`` first: held shared by every
  ``simhash_add`` with k <= 3 and by every pigeonhole-locked batch, exclusive
  by an add with k > 3 (near-duplicates need not share a block) and by a
  batch that cannot use the pigeonhole locks;
- then the block locks ``(1397246976 + i, block_i)``, in increasing
  ``(i, block_i)`` order: ``simhash_add`` takes the four of its fingerprint,
  ``add_many`` (:func:`lock_batch`) those of every fingerprint of the batch,
  in one statement.

Everyone acquires in the same global order (store lock, then blocks in
increasing order), so writers wait for each other but never deadlock, and
single adds and batches exclude each other exactly when they could collide.

A batch of n fingerprints holds up to 4n block locks until it commits, in
the server's shared lock table (max_locks_per_transaction x (max_connections
+ max_prepared_transactions) slots). A batch that would need more than a
quarter of the table takes the exclusive store-wide lock instead: correct,
but it then excludes every other writer for its duration.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from simhash_pg.bits import blocks_array

__all__ = ["LOCK_BASE", "PIGEONHOLE_BATCHES", "STORE_LOCK", "batch_lock_keys", "lock_batch"]

# The key spaces simhash_add uses: 1397246976 = "SHM\0", plus the block number;
# 1397246980 (with 0) is the store-wide lock.
LOCK_BASE = 1397246976
STORE_LOCK = 1397246980

# False: every locked batch takes the store-wide lock (for the benchmark's
# comparison of the two).
PIGEONHOLE_BATCHES = True

# Sorted explicitly by position: the locks must be taken in increasing order.
_LOCK = (
    "SELECT count(pg_advisory_xact_lock(l.i, l.b)) FROM ("
    "SELECT u.i, u.b FROM unnest(%s::integer[], %s::integer[]) WITH ORDINALITY"
    " AS u (i, b, o) ORDER BY u.o) AS l"
)
_SHARED = "SELECT pg_advisory_xact_lock_shared(%s, 0)"
_EXCLUSIVE = "SELECT pg_advisory_xact_lock(%s, 0)"
_BUDGET = (
    "SELECT current_setting('max_locks_per_transaction')::integer"
    " * (current_setting('max_connections')::integer"
    " + current_setting('max_prepared_transactions')::integer) / 4"
)


# The budget depends on settings that change only with a server restart (which
# also ends the connection): read once per connection, not once per add.
_budgets: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _budget(conn: Any) -> int:
    budget = _budgets.get(conn)
    if budget is None:
        row = conn.execute(_BUDGET).fetchone()
        budget = _budgets[conn] = int(row[0]) if row is not None else 0
    return budget


def batch_lock_keys(fps: Sequence[int]) -> tuple[list[int], list[int]]:
    """The distinct (key1, key2) block locks of unsigned fingerprints, sorted."""
    if len(fps) == 0:
        return [], []
    blocks = blocks_array(fps)
    # np.unique sorts: block 0's values ascending, then block 1's, ...
    per_block = [np.unique(blocks[:, i]) for i in range(4)]
    key1 = [LOCK_BASE + i for i, vals in enumerate(per_block) for _ in range(len(vals))]
    return key1, np.concatenate(per_block).tolist()


def lock_batch(conn: Any, fps: Sequence[int], k: int) -> str:
    """Lock a dedup batch of unsigned fingerprints in ``conn``'s transaction.

    Returns "pigeonhole" or "store" (the store-wide exclusive lock).
    """
    if k <= 3 and PIGEONHOLE_BATCHES and len(fps):
        key1, key2 = batch_lock_keys(fps)
        if len(key1) <= _budget(conn):
            conn.execute(_SHARED, [STORE_LOCK], prepare=True)
            conn.execute(_LOCK, [key1, key2], prepare=True)
            return "pigeonhole"
    conn.execute(_EXCLUSIVE, [STORE_LOCK], prepare=True)
    return "store"
