"""Pigeonhole advisory locks: concurrent writers never store two near-duplicates.

Two fingerprints within Hamming distance 3 share at least one whole 16-bit
block. A writer that is about to check-and-insert a fingerprint first takes a
transaction-level advisory lock on each (block number, block value) pair of
it, so any two writers that could store near-duplicates of each other share a
lock, and the second one checks only after the first has committed.

- ``simhash_add`` (SQL, one document) takes the four locks of its fingerprint,
  ``pg_advisory_xact_lock(1397246976 + i, block_i)`` for i = 0..3.
- ``add_many`` takes, in one statement, the locks of every fingerprint of the
  batch in the same key space, sorted by (i, block). Everyone acquires in
  increasing (i, block) order, so writers wait for each other but never
  deadlock, and single adds and batches exclude each other.

Only for k <= 3: above it, near-duplicates need not share a whole block.

A batch of n fingerprints holds up to 4n locks until it commits, in the
server's shared lock table (max_locks_per_transaction x max_connections
slots; the default 64 x 100 = 6,400 fits one batch of 1,600). The embedded
server is set up with room for several concurrent batches of the default size
(``server.sized_settings``); for another server see docs/operations.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["LOCK_BASE", "LOCK_BATCHES", "batch_lock_keys", "lock_batch"]

# The key space simhash_add uses: 1397246976 = "SHM\0", plus the block number.
LOCK_BASE = 1397246976

# Switch for measuring what the locking costs (simhash-pg bench stream);
# turning it off lets concurrent add_many batches store near-duplicates.
LOCK_BATCHES = True

# Sorted explicitly by position: the locks must be taken in increasing order.
_LOCK = (
    "SELECT count(pg_advisory_xact_lock(l.i, l.b)) FROM ("
    "SELECT u.i, u.b FROM unnest(%s::integer[], %s::integer[]) WITH ORDINALITY"
    " AS u (i, b, o) ORDER BY u.o) AS l"
)


def batch_lock_keys(signed: Sequence[int]) -> tuple[list[int], list[int]]:
    """The distinct (key1, key2) lock pairs of signed fingerprints, sorted."""
    fps = np.asarray(signed, dtype=np.int64).view(np.uint64)
    parts = [
        (np.uint64(i) << np.uint64(16)) | ((fps >> np.uint64(48 - 16 * i)) & np.uint64(0xFFFF))
        for i in range(4)
    ]
    keys = np.unique(np.concatenate(parts))  # sorted by block number, then value
    i = (keys >> np.uint64(16)).astype(np.int64)
    b = (keys & np.uint64(0xFFFF)).astype(np.int64) - 32768  # as the stored smallint
    return (i + LOCK_BASE).tolist(), b.tolist()


def lock_batch(conn: Any, signed: Sequence[int]) -> None:
    """Queue the batch's pigeonhole locks on ``conn`` (inside its transaction).

    In a pipeline this is sent ahead of the candidate look-up in the same
    round trip; the server runs it first and waits there for the locks.
    """
    if not signed:
        return
    key1, key2 = batch_lock_keys(signed)
    conn.execute(_LOCK, [key1, key2], prepare=True)
