"""The writers' advisory locks: near-duplicates and keys, taken in one order.

Two fingerprints within Hamming distance 3 share at least one whole 16-bit
block. A writer that is about to check-and-insert a fingerprint first takes a
transaction-level advisory lock on each (block number, block value) pair of
it, so any two writers that could store near-duplicates of each other share a
lock, and the second one checks only after the first has committed. Keys
work the same way: a writer locks each key it is about to look up and
insert, so two writers of one key take turns and the second finds the
first's row (instead of dying of a unique_violation or a deadlock on the
keys table).

The protocol (keys are pairs of int4; all taken by the SQL function
``simhash_writer_lock``, sql/0008_writer_locks.sql, which ``simhash_add``
and :func:`lock_batch` call):

- the store-wide lock ``(1397246980, 0)`` first: held shared by every
  ``simhash_add`` with k <= 3 or a key, by every pigeonhole-locked batch and
  every keyed batch; exclusive by an add with k > 3 (near-duplicates need
  not share a block) and by a batch that cannot use the finer locks;
- then the block locks ``(1397246976 + i, block_i)``: ``simhash_add`` takes
  the four of its fingerprint, ``add_many`` those of every fingerprint of
  the batch;
- then the signature locks ``(1397246983, signature folded to int4)``
  of probed text adds (revision 0011);
- then the key locks ``(1397246982, hashtext(key))``;

block, signature and key locks in increasing order, in one statement.

A text searched by margin-ranked probes (``VerifyPolicy.probe_budget``: the
default, ``verify="all"`` at k <= 3, titles included) finds rows
that share a probed value in some block, within the cap, or its sentence
signature; pigeonhole on its own blocks does not cover those. So its add
takes, with the store-wide lock shared, the block locks of all its probe
values (:func:`probe_lock_keys`: its own four values are among them) and
its sentence signature's lock and those of its sentence hashes
(:func:`signature_lock_key`: each 64-bit value folded to int4, in a key
space of its own; two values that fold alike only make two writers take
turns). If either text's probes reach the
other's block value, both lock that pair: one as a probe, the other as its
own value. Two texts with equal signatures, or a sentence hash in common,
lock the same key. A batch
locks the union of its probed texts' locks; a text still searched by
radius above 3 makes its add or batch take the store-wide lock
exclusively. Everyone
acquires in the same global order (store lock, blocks, signatures, keys), so
writers wait for each other but never deadlock, and single adds and batches
exclude each other exactly when they could collide.

A wait is bounded (item 7 of issue 18): by the session's ``lock_timeout`` or
``simhash.lock_timeout``, whichever is shorter (the store sets the latter;
30 s when unset). :func:`retrying` reruns a writer's transaction with
backoff: a timed-out wait up to :data:`LOCK_ATTEMPTS` tries in all, then
:class:`LockTimeoutError`; a lost race (:data:`TRANSIENT`) up to
:data:`RACE_ATTEMPTS`. Since revision 0008 only writers (roles that may
INSERT into simhash_documents) can take these locks at all.

A batch of n fingerprints holds up to 4n block locks and n key locks until
it commits, in the server's shared lock table (max_locks_per_transaction x
(max_connections + max_prepared_transactions) slots). A batch that would
need more than a quarter of the table takes the exclusive store-wide lock
instead: correct, but it then excludes every other writer for its duration.
"""

from __future__ import annotations

import random
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import psycopg

from simhash_pg.bits import PIGEONHOLE_K, blocks_array
from simhash_pg.store.sql import int_array

if TYPE_CHECKING:
    from simhash_pg.verify.jaccard import VText

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "KEY_LOCK",
    "LOCK_ATTEMPTS",
    "LOCK_BASE",
    "RACE_ATTEMPTS",
    "SIGNATURE_LOCK",
    "STORE_LOCK",
    "TRANSIENT",
    "LockTimeoutError",
    "backoff",
    "batch_lock_keys",
    "holders",
    "lock_batch",
    "lock_timeout_error",
    "probe_lock_keys",
    "retrying",
    "sentence_lock_values",
    "signature_lock_key",
]

_T = TypeVar("_T")

# The key spaces: 1397246976 = "SHM\0", plus the block number; 1397246980
# (with 0) is the store-wide lock, 1397246982 (with hashtext(key)) the keys',
# 1397246983 (with signature_lock_key(sig)) the sentence signatures' (0011).
LOCK_BASE = 1397246976
STORE_LOCK = 1397246980
KEY_LOCK = 1397246982
SIGNATURE_LOCK = 1397246983

# How long one wait for the writers' locks may last, in seconds (the store's
# default; simhash_writer_lock's own default when simhash.lock_timeout is unset).
DEFAULT_LOCK_TIMEOUT = 30.0

# Tries of one add or batch: a lock wait that timed out (lock_timeout each),
# and a race another writer won (deadlock, serialisation failure, a key
# stored outside the lock protocol), each retried with backoff.
LOCK_ATTEMPTS = 3
RACE_ATTEMPTS = 8

# Errors a writer's transaction may meet from a race with other writers that
# a rerun of the transaction resolves (with backoff): a deadlock, a
# serialisation failure, a key stored by a writer outside the lock protocol.
# A lock wait that timed out (LockNotAvailable) is retried too, fewer times.
TRANSIENT = (
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
    psycopg.errors.UniqueViolation,
)

# the block and signature keys as text literals (sql.int_array: a batch's
# 20,000 block keys dumped as lists cost twice as much), the keys as text[]
_LOCK = ("SELECT simhash_writer_lock(%s, %s::integer[], %s::integer[], %b::text[],"
         " %s::integer[])")
_BUDGET = (
    "SELECT current_setting('max_locks_per_transaction')::integer"
    " * (current_setting('max_connections')::integer"
    " + current_setting('max_prepared_transactions')::integer) / 4"
)
# Who holds the writers' locks, for the timeout's message (pg_locks and the
# pid, user and application of pg_stat_activity are visible to every role).
_HOLDERS = (
    "SELECT l.pid, a.usename, a.application_name, a.state, l.mode, l.classid::text,"
    " l.objid::text FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
    " AND l.classid BETWEEN %s AND %s AND l.pid <> pg_backend_pid()"
    " ORDER BY l.classid = %s DESC, l.mode DESC, l.pid LIMIT 5"
)


class LockTimeoutError(psycopg.errors.LockNotAvailable, TimeoutError):
    """A writer gave up waiting for the writers' locks: another session holds them.

    The message names the sessions holding them (pid, user, application):
    typically a transaction left open. Nothing of the add was stored. Also a
    psycopg ``LockNotAvailable`` (SQLSTATE 55P03; the last wait's error is its
    ``__cause__``), so handlers of database errors see it as one.
    """


# The budget depends on settings that change only with a server restart (which
# also ends the connection): read once per connection, not once per add.
_budgets: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _budget(conn: psycopg.Connection[Any]) -> int:
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


def probe_lock_keys(
    fps: Sequence[int], probes: Sequence[Sequence[Sequence[int]]]
) -> tuple[list[int], list[int]]:
    """The distinct (key1, key2) block locks of fingerprints and probe values, sorted.

    ``probes[j][i]``: the probed smallint values of block ``i`` of one probed
    text (its own value among them); ``fps``: fingerprints locked by their
    own blocks alone.
    """
    pairs = set(zip(*batch_lock_keys(fps), strict=True))
    for p in probes:
        for i, values in enumerate(p):
            pairs.update((LOCK_BASE + i, int(v)) for v in values)
    ordered = sorted(pairs)
    return [a for a, _ in ordered], [b for _, b in ordered]


def signature_lock_key(sig: int) -> int:
    """The int4 lock key of a (signed or unsigned 64-bit) sentence signature: its halves XOR-ed.

    Two signatures that fold alike only make two writers take turns.
    """
    u = sig & 0xFFFF_FFFF_FFFF_FFFF
    x = (u ^ (u >> 32)) & 0xFFFF_FFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def sentence_lock_values(vt: VText) -> list[int]:
    """What a probed text's add locks of its sentences: its signature and each sentence hash.

    Both find rows by equality, so two texts that could meet through them
    hold a value in common; they share the signatures' key space (revision
    0015 added the hashes).
    """
    return ([vt.sig] if vt.sig is not None else []) + list(vt.hashes)


def lock_batch(
    conn: psycopg.Connection[Any], fps: Sequence[int], k: int, keys: Iterable[str] = (), *,
    dedup: bool = True,
    pigeonhole: bool = True, probes: Sequence[Sequence[Sequence[int]]] = (),
    sigs: Iterable[int] = (),
) -> str:
    """Lock a batch in ``conn``'s transaction before its look-ups.

    ``fps``: the unsigned fingerprints a dedup batch checks (k: its radius);
    ``keys``: the keys it may insert. ``dedup=False``: the keys only.
    ``probes``: the probe values of the batch's probed texts (their own
    blocks among them) and ``sigs`` the sentence signatures they look up:
    locked as well, so that two texts either of which could find the other
    share a lock. ``pigeonhole=False`` takes the store-wide lock where the
    block locks would do (a benchmark's comparison of the two). Returns
    "pigeonhole" (blocks and keys), "keys", "store" (the store-wide
    exclusive lock) or "none" (nothing to lock).
    """
    key_list = list(dict.fromkeys(keys))
    key1: list[int] = []
    key2: list[int] = []
    sig_keys: list[int] = []
    exclusive = ["exclusive", None, None, None, None]
    if dedup and (len(fps) or len(probes)):
        if k > PIGEONHOLE_K or not pigeonhole:
            conn.execute(_LOCK, exclusive, prepare=True)
            return "store"
        key1, key2 = probe_lock_keys(fps, probes) if len(probes) else batch_lock_keys(fps)
        sig_keys = sorted({signature_lock_key(s) for s in sigs})
        mode = "pigeonhole"
    elif key_list:
        mode = "keys"
    else:
        return "none"
    if len(key1) + len(sig_keys) + len(key_list) <= _budget(conn):
        conn.execute(_LOCK, ["shared", int_array(key1), int_array(key2), key_list,
                             int_array(sig_keys) if sig_keys else None], prepare=True)
        return mode
    conn.execute(_LOCK, exclusive, prepare=True)
    return "store"


def retrying(
    conn: psycopg.Connection[Any], attempt: Callable[[], _T], *, lock_timeout: float | None,
    retry: bool = True,
) -> _T:
    """``attempt()`` (one transaction on ``conn``), rerun with backoff after a race it lost.

    ``retry=False`` (inside a caller's transaction, which the error
    aborted): one try, but a lock timeout still raises LockTimeoutError.
    ``lock_timeout`` (seconds, or None) is only for the error's message.
    """
    lock_waits = races = 0
    while True:
        try:
            return attempt()
        except psycopg.errors.LockNotAvailable as exc:
            lock_waits += 1
            if not retry or lock_waits >= LOCK_ATTEMPTS:
                raise lock_timeout_error(conn, lock_waits, lock_timeout) from exc
        except TRANSIENT:
            races += 1
            if not retry or races >= RACE_ATTEMPTS:
                raise
        time.sleep(backoff(lock_waits + races))


def lock_timeout_error(conn: psycopg.Connection[Any], waits: int,
                       lock_timeout: float | None) -> LockTimeoutError:
    """The error after ``waits`` timed-out waits, naming who holds the locks if it can."""
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    who = holders(conn) if idle else ""
    limit = f"{lock_timeout:g} s" if lock_timeout is not None else "lock_timeout"
    return LockTimeoutError(
        f"gave up after {waits} wait(s) of up to {limit} for the writers' locks: "
        + (f"{who}. " if who else "another session holds them. ")
        + "A transaction left open? Nothing of this add was stored; "
        "SimhashStore(lock_timeout=...) sets the wait."
    )


def backoff(attempt: int) -> float:
    """Seconds to sleep before retry ``attempt`` (1, 2, ...): doubling, jittered, capped."""
    return min(2.0, 0.05 * 2.0 ** (attempt - 1)) * random.uniform(0.5, 1.5)


def holders(conn: psycopg.Connection[Any]) -> str:
    """The sessions holding writers' locks, for an error message ("" if none or unknown)."""
    try:
        rows = conn.execute(_HOLDERS, [LOCK_BASE, SIGNATURE_LOCK, STORE_LOCK]).fetchall()
    except psycopg.Error:
        return ""
    return "; ".join(
        f"pid {pid} (user {user}, application {app or '-'}, {state or 'unknown state'}) holds"
        f" ({key1}, {key2}) {mode}"
        for pid, user, app, state, mode, key1, key2 in rows
    )
