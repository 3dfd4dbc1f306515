"""``simhash-pg bench stream``: streaming dedup adds against a populated store.

The crawler scenario of issue 5: documents arrive one at a time from several
clients and each is checked against everything stored (dedup on). The store
is first filled with N fingerprints by COPY (``bulk_load``); then, for every
client count, each client process adds fingerprints for ``--seconds``:

- ``add``: one ``store.add(fp, dedup=True)`` per document (``simhash_add``,
  one round trip, pigeonhole advisory locks), each its own durable commit:
  on most disks the WAL flush of every commit dominates (3-6 ms here);
- ``add async``: the same with ``synchronous_commit = off`` for the session
  (what ``options=-c synchronous_commit=off`` in the DSN does): commits are
  acknowledged before their WAL flush, so a server crash may lose the adds
  of the last ~0.6 s (never corrupts); a crawler re-adds them on resume;
- ``add_many``: batches of ``--batch`` (one look-up round trip and one COPY
  per batch, the batch's pigeonhole locks taken in one statement);
- ``add_many S``: the same, with the store-wide lock instead of the
  pigeonhole locks (what a batch too big for the lock table falls back to).

Each client alternates, call by call, between the locks on and, for
comparison, off, so both modes run under the same load, cache and table. A
client holds two stores (connections), one per mode, set up by explicit
options: without locks ``add`` calls a copy of ``simhash_add`` minus its
lock statement, made in the benchmark database only
(``store_with(add_function="simhash_add_unlocked")``, lab/bench/hooks.py), and ``add_many``
runs with ``lock_batches=False``; ``add_many S`` opens the locked store
with ``pigeonhole_batches=False``.
Without the locks, concurrent near-duplicates can both be stored: never run
a store like that, it is here to price the locks.

The stream: 90% new random fingerprints, 10% near-duplicates (1-3 bits) of
stored ones. Runs on a throwaway server (deleted afterwards unless --keep),
or on --dsn, whose database it EMPTIES (downgrade to base, upgrade).
"""

from __future__ import annotations

import multiprocessing
import re
import time
from typing import Any

import click
import numpy as np

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.hooks import store_with
from lab.bench.timing import pct, run_clients
from lab.connect import connect as store_connect

# Fingerprints already stored, for the stream's near-duplicates: set before
# the clients are forked, so they share it without copying.
_STORED: np.ndarray = np.zeros(0, dtype=np.uint64)

_ADD_SIGNATURE = "simhash_add(bigint,text,jsonb,integer,text,text)"


def make_unlocked_add(conn: Any) -> None:
    """simhash_add_unlocked: simhash_add without its advisory locks (bench only)."""
    src = conn.execute(
        "SELECT pg_get_functiondef(%s::regprocedure)", [_ADD_SIGNATURE]
    ).fetchone()[0]
    body, n_lock = re.subn(
        r"PERFORM\s+simhash_writer_lock\(.*?;", "NULL;", src, flags=re.DOTALL
    )
    body, n_name = re.subn(r"FUNCTION\s+(\S+\.)?simhash_add\(",
                           r"FUNCTION \1simhash_add_unlocked(", body, count=1)
    if n_lock < 1 or n_name != 1:
        raise click.ClickException("simhash_add changed shape: cannot make an unlocked copy")
    conn.execute(body)


def stream(seed: int, count: int, dup_rate: float) -> list[int]:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64 - 1, size=count, dtype=np.uint64, endpoint=True)
    dup = rng.random(count) < dup_rate
    if len(_STORED) and dup.any():
        src = _STORED[rng.integers(0, len(_STORED), size=int(dup.sum()))]
        flips = np.zeros(len(src), dtype=np.uint64)
        for _ in range(3):
            bit = rng.integers(0, 64, size=len(src)).astype(np.uint64)
            flips ^= np.where(rng.random(len(src)) < 0.7, np.uint64(1) << bit, np.uint64(0))
        fps[dup] = src ^ flips
    return [int(x) for x in fps]


def _client(args: tuple[str, str, int, float, int, float, Any, Any]) -> None:
    dsn, path, seed, seconds, batch, dup_rate, barrier, out = args
    asynchronous = path == "add async"
    # Two stores, two connections of one client: with the writers' locks
    # (for "add_many S" the store-wide one instead of the pigeonhole locks),
    # and without them: add() calls simhash_add_unlocked (made by
    # make_unlocked_add), add_many skips the near-duplicate locks.
    pigeonhole = path != "add_many S"
    path = {"add async": "add", "add_many S": "add_many"}.get(path, path)
    fps = stream(seed, 200_000 if path == "add" else 2_000_000, dup_rate)
    # per mode (locks on / off): adds, near-duplicates found, latencies (ms)
    done = {True: 0, False: 0}
    dups = {True: 0, False: 0}
    lat: dict[bool, list[float]] = {True: [], False: []}
    locked_store = store_with(pigeonhole_batches=pigeonhole)
    free_store = store_with(add_function="simhash_add_unlocked")
    with locked_store(dsn) as locked, free_store(dsn, lock_batches=False) as free:
        stores = {True: locked, False: free}
        if asynchronous:
            for store in stores.values():
                store.connection.execute("SET synchronous_commit = off")
        step = 1 if path == "add" else batch
        pos = 0
        for store in stores.values():  # warm-up: prepared statements, caches
            for _ in range(50 if path == "add" else 1):
                store.add_many(fps[pos : pos + step], batch_size=batch) if path != "add" \
                    else store.add(fps[pos])
                pos += step
        barrier.wait()
        end = time.perf_counter() + seconds
        lock = True
        while time.perf_counter() < end and pos + step <= len(fps):
            # alternate call by call: both modes see the same server, cache
            # and neighbours, so their difference is the locks' cost
            lock = not lock
            store = stores[lock]
            t = time.perf_counter()
            if path == "add":
                r = store.add(fps[pos])
                dups[lock] += not r.inserted
            else:
                res = store.add_many(fps[pos : pos + step], batch_size=batch)
                dups[lock] += res.duplicates
            lat[lock].append((time.perf_counter() - t) * 1000)
            done[lock] += step
            pos += step
    out.put((done, dups, lat))


def _prewarm(conn: Any) -> str:
    """Read the whole store into the cache before timing, by the product's rule
    (:func:`simhash_pg.store.warm.warm`, everything: what shared buffers cannot
    hold waits in the OS cache, as in a store that has run a while); say how.

    The key table too: left cold (before this release's benches), a big
    store's keyed look-ups paid reads from outside shared buffers that its
    steady state does not (+0.4 ms a title query at 3M rows).
    """
    from simhash_pg.store.warm import WarmError, warm

    try:
        done = warm(conn, everything=True)
    except WarmError:
        # no contrib: index-only scans of the block indexes instead
        for i in range(4):
            conn.execute(f"SELECT count(*) FROM simhash_documents WHERE b{i} >= -32768")
        return "block index scans"
    return f"pg_prewarm of {len(done.read)} relations"


def measure(dsn: str, path: str, clients: int, seconds: float, batch: int,
            dup_rate: float, seed: int) -> dict[bool, dict[str, Any]]:
    """Figures with the locks on (True) and off (False), interleaved in one run.

    adds/s of a mode = the adds it made / the time spent in it, summed over
    the clients: the rate a run in that mode alone would reach.
    """
    # forked (run_clients): the children share _STORED and skip re-importing NumPy/psycopg
    results = run_clients(_client, [(dsn, path, seed + 7919 * i, seconds, batch, dup_rate)
                                    for i in range(clients)], seconds)
    figures: dict[bool, dict[str, Any]] = {}
    for lock in (True, False):
        lat = [x for r in results for x in r[2][lock]]
        done = sum(r[0][lock] for r in results)
        rate = sum(r[0][lock] / (sum(r[2][lock]) / 1000) for r in results if r[2][lock])
        figures[lock] = {
            "adds_s": rate,
            "p50": pct(lat, 50) if lat else float("nan"),
            "p99": pct(lat, 99) if lat else float("nan"),
            "dups": sum(r[1][lock] for r in results) / max(done, 1),
            "done": done,
        }
    return figures


@click.command("stream")
@click.option("--n", "n", type=click.IntRange(1000), default=1_000_000, show_default=True,
              help="Fingerprints stored (COPY) before the stream starts.")
@click.option("--clients", default="1,2,4", show_default=True,
              help="Client process counts to measure, comma-separated.")
@click.option("--seconds", type=click.FloatRange(1), default=8.0, show_default=True,
              help="Time per configuration (calls alternate between locks on and off).")
@click.option("--batch", type=click.IntRange(0), default=1000, show_default=True,
              help="add_many batch size (0: measure single adds only).")
@click.option("--dup-rate", type=click.FloatRange(0, 1), default=0.1, show_default=True,
              help="Share of the stream that near-duplicates a stored document.")
@click.option("--seed", type=int, default=1, show_default=True)
@scratch_options
def command(n: int, clients: str, seconds: float, batch: int, dup_rate: float, seed: int,
            dsn: str | None, home: str | None, keep: bool) -> None:
    """Streaming dedup adds/s and latency, with the pigeonhole locks on and off."""
    try:
        counts = [int(c) for c in clients.split(",") if c.strip()]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--clients") from exc
    if not counts or min(counts) < 1:
        raise click.BadParameter("give client counts >= 1, e.g. 1,2,4", param_hint="--clients")
    from simhash_pg.db.server import sized_settings

    settings = sized_settings(large=True)  # as measured: `server tune --large`
    # every client's add_many batch holds up to 4 x batch locks until it
    # commits: room for all of them in the shared lock table, twice over
    slots = 2 * 4 * max(batch, 1) * max(counts)
    per_tx = max(1024, -(-slots // int(settings.get("max_connections", "100"))))
    settings["max_locks_per_transaction"] = str(per_tx)
    with scratch_dsn(dsn, home=home, keep=keep, settings=settings) as url:
        _run(url, n, counts, seconds, batch, dup_rate, seed)


def _run(dsn: str, n: int, counts: list[int], seconds: float, batch: int, dup_rate: float,
         seed: int) -> None:
    global _STORED

    from lab.bench.store import make_data
    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    with store_connect(dsn) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        locks = conn.execute(
            "SELECT current_setting('max_locks_per_transaction'),"
            " current_setting('max_connections')"
        ).fetchone()
        partitioned = conn.execute(
            "SELECT relkind = 'p' FROM pg_class WHERE oid = 'simhash_documents'::regclass"
        ).fetchone()
        make_unlocked_add(conn)
    echo(f"simhash-pg bench stream: n={n:,} clients={counts} {seconds:g} s each, "
         f"add_many batch={batch}, dup rate={dup_rate:g}, seed={seed}")
    echo(f"PostgreSQL {version}, {multiprocessing.cpu_count()} cores, "
         f"max_locks_per_transaction={locks[0] if locks else '?'}, "
         f"retention partitions: {'yes' if partitioned and partitioned[0] else 'no (plain table)'}")
    t = time.perf_counter()
    fps = make_data(n, seed, False)
    with SimhashStore(dsn) as store:
        store.bulk_load(fps)
    echo(f"preloaded {n:,} rows by COPY in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    with store_connect(dsn) as conn:
        # a live store has its table and indexes cached and no load-sized
        # checkpoint pending: get there before timing anything
        conn.execute("CHECKPOINT")
        warmed = _prewarm(conn)
    echo(f"checkpoint and cache warm-up ({warmed}) in {time.perf_counter() - t:.1f} s")
    _STORED = fps

    paths = ["add", "add async"] + (["add_many", "add_many S"] if batch else [])
    head = (f"{'path':<10} {'clients':>7} {'locks':>5} {'adds/s':>9} {'p50 ms':>8} "
            f"{'p99 ms':>8} {'dups':>5} {'lock cost':>9}")
    rows = [head, "-" * len(head)]
    echo(head)
    echo(rows[1])
    run = 0
    for c in counts:
        for path in paths:
            run += 1
            figures = measure(dsn, path, c, seconds, batch, dup_rate, seed * 1000 + run)
            for lock in (True, False):
                f = figures[lock]
                cost = ""
                if lock and figures[False]["adds_s"] > 0:
                    cost = f"{100 * (1 - f['adds_s'] / figures[False]['adds_s']):+.0f}%"
                line = (f"{path:<10} {c:>7} {'on' if lock else 'off':>5} {f['adds_s']:>9,.0f} "
                        f"{f['p50']:>8.2f} {f['p99']:>8.2f} {100 * f['dups']:>4.0f}% {cost:>9}")
                rows.append(line)
                echo(line)
    with store_connect(dsn) as conn:
        total = conn.execute("SELECT count(*) FROM simhash_documents").fetchone()[0]  # type: ignore[index]
    echo(f"rows stored at the end: {total:,}. Latency is per add (add) or per batch of "
         f"{batch} (add_many); lock cost = adds/s lost to the locks; add async = "
         "synchronous_commit off; add_many S = store-wide lock, not the pigeonhole "
         "locks. Floor 278 adds/s (1M an hour); target 3,000 adds/s with 2 clients "
         "at 10M rows.")
