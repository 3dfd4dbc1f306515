"""One document's add: the plain one round trip, or the verified add.

A fingerprint, or a text whose store neither verifies nor keeps its
verification text (``verify="off"``), goes through the SQL function
``simhash_add``: check and insert in one round trip, its pigeonhole locks
taken inside (k <= 3), the text's body (its text as written) stored with the
row it inserts (its last parameter, revision 0023). A text that is verified
or whose verification text is kept is re-checked in Python, so
:func:`add_verified` takes the locks itself, then looks up the key and the
candidates, then inserts (its body with it).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from simhash_pg.bits import to_signed, to_unsigned
from simhash_pg.store import locking, sql
from simhash_pg.store.lookup import lookup_for_add
from simhash_pg.store.results import AddResult, OnDuplicate
from simhash_pg.verify import VerifyPolicy, VText

__all__ = ["add_plain", "add_verified"]


def add_plain(
    conn: psycopg.Connection[Any], statement: str, fp: int, key: str | None,
    meta: dict[str, Any] | None, k: int, mode: str, lock_timeout: float | None,
    *, body: str | None = None,
) -> AddResult:
    """``simhash_add`` (``statement``) of one fingerprint; ``mode``: skip, link or insert.

    ``body``: the text as written, stored with the row if one is inserted.
    """
    args = [to_signed(fp), key, Jsonb(meta) if meta is not None else None, k, mode, body]
    # one statement, its own transaction (autocommit): a rerun is safe
    # unless the caller has a transaction open on this connection
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    def attempt() -> tuple[Any, ...] | None:
        return conn.execute(statement, args, prepare=True).fetchone()

    row = locking.retrying(conn, attempt, lock_timeout=lock_timeout, retry=idle)
    assert row is not None
    rid, rfp, dup, dist, inserted, dup_key = row
    return AddResult(rid, to_unsigned(rfp), dup, dist, inserted, key=key, duplicate_key=dup_key,
                     existing_key=not inserted and dist is None)


def add_verified(
    conn: psycopg.Connection[Any], fp: int, vt: VText, key: str | None,
    meta: dict[str, Any] | None, k: int, on_duplicate: OnDuplicate, dedup: bool,
    policy: VerifyPolicy, lock_timeout: float | None, probe_locks: bool = True,
    *, body: str | None = None,
) -> AddResult:
    """add() of a text when verification is on or its text is kept: three round trips
    (four when a long text's look-up takes its second step).

    The locks first (a probed text: its block values and probe values and
    its signature; else the store-wide one when the policy's radius exceeds
    3, as for a short text), then the key and the candidates (a long text's
    in two steps: :func:`simhash_pg.store.lookup.lookup_for_add`), then the
    insert. ``probe_locks=False`` (a test's proof that they matter) locks a
    probed text by its own blocks alone. ``body``: the text as written, stored
    with the row.
    """
    signed = to_signed(fp)
    vtext, sig, hashes = policy.stored_fields(vt)
    keys = [key] if key is not None else []
    probed = policy.probe_budget(vt.text, k) is not None

    def lock() -> None:
        if probed and probe_locks:
            assert vt.probes is not None
            sigs = locking.sentence_lock_values(vt) if policy.signature else []
            locking.lock_batch(conn, [fp], k, keys, dedup=dedup,
                               probes=[policy.lock_probes(vt)], sigs=sigs)
        elif probed:
            locking.lock_batch(conn, [fp], k, keys, dedup=dedup)
        else:
            locking.lock_batch(conn, [fp], policy.radius(vt.text, k), keys, dedup=dedup)

    def attempt() -> AddResult:
        with conn.transaction():
            lock()  # the fingerprint's locks (and the key's), or the key's alone
            if key is not None:
                row = conn.execute(sql.KEYS, [[key]], prepare=True).fetchone()
                if row is not None:
                    return AddResult(row[1], to_unsigned(row[2]), row[3], None, False,
                                     key=key, existing_key=True)
            best = None
            if dedup:
                found = lookup_for_add(conn, [signed], [vt], k, policy)[0].found
                best = found[0] if found else None
            if best is not None and on_duplicate == "skip":
                return AddResult(best.id, fp, best.id, best.distance, False, key=key,
                                 duplicate_key=best.key)
            row = conn.execute(
                sql.INSERT,
                [key, signed, best.id if best else None,
                 Jsonb(meta) if meta is not None else None, vtext, sig, hashes, body],
                prepare=True,
            ).fetchone()
            assert row is not None
            return AddResult(row[0], fp, best.id if best else None,
                             best.distance if best else None, True, key=key,
                             duplicate_key=best.key if best else None)

    return locking.retrying(conn, attempt, lock_timeout=lock_timeout)
