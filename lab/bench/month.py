"""near() over a month of filled daily or weekly partitions against one partition of the same rows.

    uv run python -m lab.bench.month --days 30 --per-day 1700000

Issue 17, item 3. One throwaway embedded server, three databases at the
head revision holding the same fingerprints: ``daily``, one filled daily
partition per past day (every query pays every partition's index descents);
``weekly``, the same rows in weekly partitions (the store's
``partition_interval="week"``, revision 0013); ``one``, every row in today's
partition (bulk_load). Each has the store's partitions ahead and its default
partition. near() k = 3 is timed query by query, in turns between the three
(the machine is shared: the ratios are the figures to read).
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

import numpy as np
from psycopg.conninfo import make_conninfo

from lab.bench._scratch import scratch_dsn
from lab.bench.floor import race
from lab.bench.store import make_data, queries_for
from lab.bench.timing import pct, timed_ms
from lab.connect import connect as store_connect
from simhash_pg.bits import to_signed_array
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore
from simhash_pg.store.retention import PartitionInterval


def fill_month(dsn: str, fps: np.ndarray, days: int,
               interval: PartitionInterval = "day") -> float:
    """``days`` past days of ``fps`` in partitions of ``interval``; seconds."""
    t = time.perf_counter()
    with SimhashStore(dsn, partition_interval=interval):
        pass  # records the interval and lays the partitions ahead out by it
    with store_connect(dsn) as conn:
        per_day = np.array_split(to_signed_array(fps), days)
        for d, chunk in enumerate(per_day, start=1):
            # the partition holding that day, if none does yet (a week's: once)
            conn.execute("SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date - %s)",
                         [d])
            conn.execute(
                "INSERT INTO simhash_documents (fingerprint, created_at)"
                " SELECT u.fp, now() - %s * interval '1 day' FROM unnest(%s::bigint[]) AS u (fp)",
                [d, chunk.tolist()])
        assert conn.execute("SELECT count(*) FROM simhash_documents_default").fetchone() == (0,)
        conn.execute("VACUUM (ANALYZE) simhash_documents")
    return time.perf_counter() - t


def _add(store: SimhashStore, chunk: np.ndarray) -> None:
    store.add_many([int(x) for x in chunk])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--per-day", type=int, default=1_700_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--add-rows", type=int, default=20_000)
    a = ap.parse_args()
    n = a.days * a.per_day
    fps = make_data(n, a.seed, False)
    qs = queries_for(fps, a.queries, 3, a.seed)
    print(f"load average at start: {os.getloadavg()}")
    with scratch_dsn(dbname="daily") as url:
        urls = {"daily": url, "weekly": make_conninfo(url, dbname="weekly"),
                "one": make_conninfo(url, dbname="one")}
        with store_connect(url) as c:
            c.execute("CREATE DATABASE weekly")
            c.execute("CREATE DATABASE one")
        for dsn in urls.values():
            migrate.upgrade(dsn)
        print(f"bench month: {a.days} days x {a.per_day:,} rows = {n:,} rows in daily"
              f" partitions, in weekly ones, and in one partition")
        layouts: tuple[tuple[str, PartitionInterval], ...] = (("daily", "day"),
                                                              ("weekly", "week"))
        for name, interval in layouts:
            filled = fill_month(urls[name], fps, a.days, interval)
            print(f"{name} filled (INSERT per day, VACUUM ANALYZE) in {filled:.0f} s")
        with SimhashStore(urls["one"]) as one_store:
            t = time.perf_counter()
            one_store.bulk_load(fps)
            print(f"one partition bulk-loaded in {time.perf_counter() - t:.0f} s")
        stores = {name: SimhashStore(dsn) for name, dsn in urls.items()}
        try:
            for name, store in stores.items():
                parts = store.connection.execute(
                    "SELECT count(*), count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM"
                    " simhash_documents d WHERE d.tableoid = p.partition))"
                    " FROM simhash_partitions() p").fetchone()
                assert parts is not None
                print(f"partitions [{name}]: {parts[0]} ({parts[1]} empty: the days ahead,"
                      " the default)")
            for q in qs[:200]:  # warm-up: caches, prepared statements
                for store in stores.values():
                    store.near(q, k=3)
            times: dict[str, list[float]] = {name: [] for name in stores}
            for q in qs:
                for name, store in stores.items():
                    times[name].append(timed_ms(partial(store.near, q, k=3)))
            for name, ts in times.items():
                print(f"near() k=3 [{name}]: p50 {pct(ts, 50):.3f} ms, p95 {pct(ts, 95):.3f} ms,"
                      f" p99 {pct(ts, 99):.3f} ms ({len(ts)} queries, in turns)")
            one50 = pct(times["one"], 50)
            for name in ("daily", "weekly"):
                print(f"{name} / one at p50: {pct(times[name], 50) / one50:.2f}x")
            # adds go to today's partition: empty in the daily store, this week's
            # in the weekly one, all rows in the other
            extra = {name: make_data(a.add_rows, a.seed + 50 + i, False)
                     for i, name in enumerate(stores)}
            rates = race({name: partial(_add, store) for name, store in stores.items()},
                         extra, 5000)
            print("add_many(dedup=True) into today's partition (batches in turns): "
                  + ", ".join(f"{name} {rate:,.0f} docs/s" for name, rate in rates.items()))
        finally:
            for store in stores.values():
                store.close()
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
