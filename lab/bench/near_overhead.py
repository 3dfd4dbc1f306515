"""``simhash-pg bench near-overhead``: where a near() call's time goes, layer by layer.

Loads N fingerprints of ``bench store``'s data, then times, interleaved per
query (so the shared machine's noise hits every layer alike), p50 of:

- ``SimhashStore.near(fp)``: the whole call from Python;
- the store's statement (``sql.NEAR``: simhash_near joined to the rows for
  meta), prepared, rows fetched as tuples;
- ``simhash_near`` alone, prepared;
- ``SELECT $1::bigint``, prepared: the round trip every call pays.

Then it drops the partitions holding no rows (the days made ahead and the
default one: in this scratch database only) and times the same again: the
difference is what the empty partitions cost every search.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import click

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.store import make_data, queries_for


@click.command("near-overhead")
@click.option("--n", "n", type=click.IntRange(1000), default=1_000_000, show_default=True,
              help="Rows to load.")
@click.option("--queries", type=click.IntRange(100), default=1000, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@scratch_options
def command(n: int, queries: int, seed: int, dsn: str | None, home: str | None,
            keep: bool) -> None:
    """Time near() k = 3 layer by layer, with and without the empty partitions."""
    with scratch_dsn(dsn, home=home, keep=keep) as url:
        _run(url, n, queries, seed)


def layers(store: Any, qs: list[int]) -> dict[str, float]:
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
    for q in qs[:100]:  # warm-up: plans, caches
        for call in calls.values():
            call(q)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for q in qs:
        for name, call in calls.items():
            t = time.perf_counter()
            call(q)
            times[name].append((time.perf_counter() - t) * 1000)
    return {name: statistics.median(v) for name, v in times.items()}


def _run(dsn: str, n: int, nq: int, seed: int) -> None:
    import psycopg

    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    fps = make_data(n, seed, False)
    qs = queries_for(fps, nq, 3, seed)
    with SimhashStore(dsn, k=3) as store:
        store.bulk_load(fps)
    conn = psycopg.connect(dsn, autocommit=True)
    parts = [r[0] for r in conn.execute(
        "SELECT p.partition::text FROM simhash_partitions() p"
        " WHERE NOT EXISTS (SELECT 1 FROM simhash_documents d WHERE d.tableoid = p.partition)"
    ).fetchall()]
    total = conn.execute("SELECT count(*) FROM simhash_partitions()").fetchone()[0]  # type: ignore[index]
    echo(f"simhash-pg bench near-overhead: n={n:,}, {nq} queries, p50 in ms, interleaved")
    with SimhashStore(dsn, k=3) as store:
        before = layers(store, qs)
    for p in parts:
        conn.execute(f"DROP TABLE {p}")
    with SimhashStore(dsn, k=3) as store:
        after = layers(store, qs)
    echo(f"{'layer':40s} {total} partitions ({len(parts)} empty)   1 partition")
    for name in before:
        echo(f"{name:40s} {before[name]:8.3f}                 {after[name]:8.3f}")
    conn.close()
