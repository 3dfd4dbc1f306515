"""``simhash-pg bench near-overhead``: where a near() call's time goes, layer by layer.

Loads N fingerprints of ``bench store``'s data, then times, interleaved per
query (so the shared machine's noise hits every layer alike), p50 of:

- ``SimhashStore.near(fp)``: the whole call from Python;
- the store's statement (``sql.NEAR``: simhash_near joined to the rows for
  meta), prepared, rows fetched as tuples;
- ``simhash_near`` alone, prepared;
- ``SELECT $1::bigint``, prepared: the round trip every call pays.

It does so under four layouts of today's partition (which holds every row)
and empty ones beside it, in turns (``--rounds``, each a share of the
queries): today, 2 days made ahead and the default partition (the layout
before revision 0013), 1 day ahead and the default, the default alone, and
today's partition alone. The differences are what the empty partitions cost
every search.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import click

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.store import make_data, queries_for
from lab.connect import connect as store_connect


@click.command("near-overhead")
@click.option("--n", "n", type=click.IntRange(1000), default=1_000_000, show_default=True,
              help="Rows to load.")
@click.option("--queries", type=click.IntRange(100), default=1000, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--rounds", type=click.IntRange(1), default=8, show_default=True,
              help="Turns through the layouts, each from another first layout (the "
                   "queries split between them).")
@scratch_options
def command(n: int, queries: int, seed: int, rounds: int, dsn: str | None, home: str | None,
            keep: bool) -> None:
    """Time near() k = 3 layer by layer, with 3, 2, 1 and no empty partitions."""
    with scratch_dsn(dsn, home=home, keep=keep) as url:
        _run(url, n, queries, seed, rounds)


def layers(store: Any, qs: list[int]) -> dict[str, list[float]]:
    from simhash_pg.bits import to_signed
    from simhash_pg.store import sql

    conn = store.connection
    calls: dict[str, Callable[[int], object]] = {
        "store.near(fp, k=3)": lambda q: store.near(q, k=3),
        "sql.NEAR (simhash_near + rows' meta)": lambda q: conn.execute(
            sql.NEAR, [to_signed(q), 3, None], prepare=True).fetchall(),
        "simhash_near(fp, 3) alone": lambda q: conn.execute(
            "SELECT id, key, distance FROM simhash_near(%s, %s)", [to_signed(q), 3],
            prepare=True).fetchall(),
        "round trip SELECT $1::bigint": lambda q: conn.execute(
            "SELECT %s::bigint", [to_signed(q)], prepare=True).fetchall(),
    }
    for q in qs[:50]:  # warm-up: plans, caches
        for call in calls.values():
            call(q)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for q in qs:
        for name, call in calls.items():
            t = time.perf_counter()
            call(q)
            times[name].append((time.perf_counter() - t) * 1000)
    return times


# The partition layouts compared: how many empty partitions sit beside
# today's (which holds every row). "2 ahead" is the store's layout before
# this change (today, two days made ahead, the default partition).
LAYOUTS: dict[str, int] = {"2 ahead + default": 2, "1 ahead + default": 1,
                           "0 ahead + default": 0, "1 partition": -1}


def _lay_out(conn: Any, ahead: int) -> None:
    """Today's partition plus ``ahead`` empty days and the default (-1: today's alone)."""
    for name, in conn.execute(
            "SELECT p.partition::text FROM simhash_partitions() p WHERE NOT EXISTS"
            " (SELECT 1 FROM simhash_documents d WHERE d.tableoid = p.partition)").fetchall():
        conn.execute(f"DROP TABLE {name}")
    if ahead >= 0:
        conn.execute("CREATE TABLE simhash_documents_default PARTITION OF simhash_documents"
                     " DEFAULT")
        conn.execute("SELECT simhash_ensure_partitions(%s)", [ahead]).fetchall()


def _run(dsn: str, n: int, nq: int, seed: int, rounds: int) -> None:

    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    fps = make_data(n, seed, False)
    qs = queries_for(fps, nq, 3, seed)
    with SimhashStore(dsn, k=3) as store:
        store.bulk_load(fps)
    conn = store_connect(dsn)
    echo(f"simhash-pg bench near-overhead: n={n:,}, {nq} queries per layout over {rounds} rounds,"
         " p50 in ms; layouts in turn, layers interleaved per query")
    per_round = [qs[i::rounds] for i in range(rounds)]
    times: dict[str, dict[str, list[float]]] = {name: {} for name in LAYOUTS}
    order = list(LAYOUTS.items())
    for r in range(rounds):
        # each round starts at another layout: the first one after a change of
        # layouts pays more in store.near (measured: +0.03-0.05 ms at 1M rows)
        for name, ahead in order[r % len(order):] + order[:r % len(order)]:
            _lay_out(conn, ahead)
            with SimhashStore(dsn, k=3) as store:
                for layer, ts in layers(store, per_round[r]).items():
                    times[name].setdefault(layer, []).extend(ts)
    parts = {name: ahead + 2 if ahead >= 0 else 1 for name, ahead in LAYOUTS.items()}
    echo(f"{'layer':40s} " + " ".join(f"{f'{name} ({parts[name]})':>22s}" for name in LAYOUTS))
    for layer in times["1 partition"]:
        echo(f"{layer:40s} " + " ".join(
            f"{statistics.median(times[name][layer]):22.3f}" for name in LAYOUTS))
    conn.close()
