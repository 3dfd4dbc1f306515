"""near() over a month of filled daily partitions against one partition of the same rows.

    uv run python -m lab.bench.month --days 30 --per-day 1700000

Issue 17, item 3. One throwaway embedded server, two databases at the head
revision holding the same fingerprints: ``month``, one filled daily
partition per past day (every query pays every partition's index descents),
and ``one``, every row in today's partition (bulk_load). near() k = 3 is
timed query by query, alternating between the two (the machine is shared:
the ratio is the figure to read).
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

from lab.bench._scratch import scratch_dsn
from lab.bench.floor import race
from lab.bench.store import make_data, queries_for
from lab.bench.timing import pct, timed_ms
from simhash_pg.bits import to_signed_array
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore


def fill_month(dsn: str, fps: np.ndarray, days: int) -> float:
    """``days`` past daily partitions, each filled with its share of ``fps``; seconds."""
    t = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        per_day = np.array_split(to_signed_array(fps), days)
        for d, chunk in enumerate(per_day, start=1):
            conn.execute("SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date - %s)",
                         [d])
            part = conn.execute(
                "SELECT p.partition::text FROM simhash_partitions() p WHERE NOT p.is_default"
                " AND now() - %s * interval '1 day' >= p.lower_bound"
                " AND now() - %s * interval '1 day' < p.upper_bound", [d, d]).fetchone()
            assert part is not None
            conn.execute(
                "INSERT INTO simhash_documents (fingerprint, created_at)"
                " SELECT u.fp, now() - %s * interval '1 day' FROM unnest(%s::bigint[]) AS u (fp)",
                [d, chunk.tolist()])
            conn.execute(f"VACUUM (ANALYZE) {part[0]}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--per-day", type=int, default=1_700_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    n = a.days * a.per_day
    fps = make_data(n, a.seed, False)
    qs = queries_for(fps, a.queries, 3, a.seed)
    with scratch_dsn(dbname="month") as url:
        one_url = make_conninfo(url, dbname="one")
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE DATABASE one")
        for dsn in (url, one_url):
            migrate.upgrade(dsn)
        print(f"bench month: {a.days} daily partitions x {a.per_day:,} rows = {n:,} rows,"
              f" against one partition of {n:,}")
        filled = fill_month(url, fps, a.days)
        print(f"month filled (INSERT per day, VACUUM ANALYZE) in {filled:.0f} s")
        with SimhashStore(one_url) as one_store:
            t = time.perf_counter()
            one_store.bulk_load(fps)
            print(f"one partition bulk-loaded in {time.perf_counter() - t:.0f} s")
        with SimhashStore(url) as month, SimhashStore(one_url) as one:
            parts = month.connection.execute(
                "SELECT count(*) FROM simhash_partitions()").fetchone()
            print(f"partitions in the month store (with today, the days ahead, default): "
                  f"{parts[0] if parts else '?'}")
            for q in qs[:200]:  # warm-up: caches, prepared statements
                month.near(q, k=3)
                one.near(q, k=3)
            times: dict[str, list[float]] = {"month": [], "one": []}
            for q in qs:
                times["month"].append(timed_ms(partial(month.near, q, k=3)))
                times["one"].append(timed_ms(partial(one.near, q, k=3)))
            for name, ts in times.items():
                print(f"near() k=3 [{name}]: p50 {pct(ts, 50):.3f} ms, p95 {pct(ts, 95):.3f} ms,"
                      f" p99 {pct(ts, 99):.3f} ms ({len(ts)} queries, alternating)")
            print(f"month / one at p50: {pct(times['month'], 50) / pct(times['one'], 50):.2f}x")
            # adds go to today's partition: small in the month store, all rows in the other
            extra = {name: make_data(20_000, a.seed + 50 + i, False)
                     for i, name in enumerate(("month", "one"))}
            rates = race({"month": lambda c: month.add_many([int(x) for x in c]),
                          "one": lambda c: one.add_many([int(x) for x in c])}, extra, 5000)
            print(f"add_many(dedup=True) into today's partition: month store {rates['month']:,.0f}"
                  f" docs/s, one partition {rates['one']:,.0f} docs/s (alternating batches)")


if __name__ == "__main__":
    main()
