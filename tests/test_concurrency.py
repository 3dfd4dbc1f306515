"""Race-free dedup under load: 8 processes adding near-duplicates at once.

The pool holds base fingerprints and copies of them with 0..3 bits flipped,
so many adds in flight at the same moment are near-duplicates of each other.
Whatever the interleaving, the store must end with no two rows within k = 3
(``simhash_pairs(3)`` is empty), and every add must have been answered with
"inserted" or the id of a stored row within distance 3.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from typing import Any

import numpy as np
import psycopg
import pytest

from simhash_pg.bits import to_unsigned
from simhash_pg.store import AddResult, Doc, SimhashStore

PROCESSES = 8
ADDS = 2000  # per process
BATCH = 100  # add_many batch size
BASES = 600


def make_pool(seed: int = 5) -> list[int]:
    """Bases far apart (random 64-bit), each with 6 copies 0..3 bits away."""
    rnd = random.Random(seed)
    pool: list[int] = []
    for _ in range(BASES):
        base = rnd.getrandbits(64)
        pool.append(base)
        for n in (0, 1, 1, 2, 3, 3):
            fp = base
            for bit in rnd.sample(range(64), n):
                fp ^= 1 << bit
            pool.append(fp)
    return pool


Outcome = tuple[int, bool, int, int | None]  # (fingerprint, inserted, id, distance)


def _outcome(fp: int, r: AddResult) -> Outcome:
    assert r.id is not None and r.error is None, r
    return (fp, r.inserted, r.id, r.distance)


def _worker(args: tuple[str, int, str, Any]) -> list[Outcome]:
    dsn, index, mode, barrier = args
    pool = make_pool()
    rnd = random.Random(1000 + index)
    # each process walks the pool in its own random order: near-duplicates of
    # one base arrive from several processes at about the same time
    picks = [pool[rnd.randrange(len(pool))] for _ in range(ADDS)]
    if mode == "mixed":
        mode = "add" if index % 2 == 0 else "add_many"
    out: list[Outcome] = []
    with SimhashStore(dsn) as store:
        barrier.wait()
        if mode == "add":
            for fp in picks:
                out.append(_outcome(fp, store.add(fp, dedup=True)))
        else:
            def collect(results: list[AddResult]) -> None:
                for r in results:
                    assert r.fingerprint is not None
                    out.append(_outcome(r.fingerprint, r))

            store.add_many((Doc(fp) for fp in picks), dedup=True, batch_size=BATCH,
                           progress=collect)
    return out


def _run(dsn: str, mode: str) -> list[Outcome]:
    # fork: spawn re-imports NumPy and psycopg in 8 children, which took
    # 20-40 s on a busy 2-core machine; the children never touch the
    # parent's connections and leave through os._exit.
    ctx = multiprocessing.get_context("fork")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(PROCESSES)
        with ctx.Pool(PROCESSES) as procs:
            per = procs.map(_worker, [(dsn, i, mode, barrier) for i in range(PROCESSES)])
    return [o for outs in per for o in outs]


def _check(pg: psycopg.Connection, outcomes: list[Outcome]) -> tuple[int, int]:
    assert len(outcomes) == PROCESSES * ADDS
    rows = {
        r[0]: to_unsigned(r[1])
        for r in pg.execute("SELECT id, fingerprint FROM simhash_documents").fetchall()
    }
    assert pg.execute("SELECT count(*) FROM simhash_pairs(3)").fetchone() == (0,)
    inserted = [o for o in outcomes if o[1]]
    assert len(inserted) == len(rows) == len({o[2] for o in inserted})
    for fp, was_inserted, id_, distance in outcomes:
        assert id_ in rows
        if was_inserted:
            assert rows[id_] == fp
        else:
            assert distance is not None
            assert (rows[id_] ^ fp).bit_count() == distance <= 3
    # every fingerprint added is stored or has a stored row within 3
    stored = np.array(list(rows.values()), dtype=np.uint64)
    for fp in {o[0] for o in outcomes}:
        assert int(np.bitwise_count(stored ^ np.uint64(fp)).min()) <= 3
    return len(outcomes), len(rows)


@pytest.mark.parametrize("mode", ["add", "add_many", "mixed"])
def test_concurrent_dedup_keeps_one_of_each_near_duplicate_group(
    pg: psycopg.Connection, pg_dsn: str, mode: str
) -> None:
    SimhashStore(pg_dsn).close()  # scheme recorded once, not raced by 8 openers
    start = time.perf_counter()
    outcomes = _run(pg_dsn, mode)
    seconds = time.perf_counter() - start
    ops, checked = _check(pg, outcomes)
    dups = sum(1 for o in outcomes if not o[1])
    print(f"\n[{mode}] {PROCESSES} processes x {ADDS} adds = {ops} operations in "
          f"{seconds:.1f} s; {checked} rows stored, {dups} answered as near-duplicates, "
          f"{checked} rows and {ops} answers checked, simhash_pairs(3) empty")


def test_batch_lock_keys_are_the_keys_simhash_add_takes(pg: psycopg.Connection) -> None:
    from simhash_pg.bits import to_signed
    from simhash_pg.locking import batch_lock_keys

    fps = [*make_pool()[:50], 0, 2**64 - 1, 2**63 - 1, 2**63]
    key1, key2 = batch_lock_keys(fps)
    sql_keys = pg.execute(
        "SELECT DISTINCT 1397246976 + i, simhash_block(fp, i)::integer"
        " FROM unnest(%s::bigint[]) AS fp, generate_series(0, 3) AS i ORDER BY 1, 2",
        [[to_signed(fp) for fp in fps]],
    ).fetchall()
    assert list(zip(key1, key2, strict=True)) == [tuple(r) for r in sql_keys]


def test_stream_bench_measures_locks_on_and_off(pg_dsn: str) -> None:
    from lab.bench import stream as bench

    SimhashStore(pg_dsn).close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        bench.make_unlocked_add(conn)
        src = conn.execute(
            "SELECT prosrc FROM pg_proc WHERE proname = 'simhash_add_unlocked'"
        ).fetchone()
        assert src is not None and "pg_advisory_xact_lock" not in src[0]
    for path in ("add", "add_many", "add_many S"):
        figures = bench.measure(pg_dsn, path, 2, 1.0, 50, 0.1, 1)
        for lock in (True, False):
            assert figures[lock]["done"] > 0 and figures[lock]["adds_s"] > 0
