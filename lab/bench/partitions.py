"""Plain table (revision 0003) vs daily partitions (0005), side by side in one run.

    uv run python -m lab.bench.partitions --n 1000000

One throwaway embedded server, two databases: ``plain`` migrated to 0003,
``parted`` to the head. Every measurement alternates between the two (the
machine is shared and noisy: ratios measured this way are comparable, the
absolute figures less so):

1. bulk_load of N fingerprints (COPY FREEZE, index builds, VACUUM), twice each;
2. the same N fingerprints re-inserted with created_at spread over the last
   4 days (plain: one table; parted: 4 past daily partitions + today + 1
   ahead + default = 7 partitions), then near() k=3 and k=6 latencies,
   query by query alternating;
3. add_many with keys (the keys trigger) and simhash_add with keys, alternating;
4. the purge of everything older than 2 days: batched DELETE vs partition drops,
   with the sizes before and after; then near() again (5 partitions left).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any
from unittest import mock

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

from lab.bench._scratch import scratch_dsn
from lab.bench.store import make_data, queries_for
from lab.bench.timing import pct, timed_ms
from lab.connect import connect as store_connect
from simhash_pg import Doc
from simhash_pg.bits import to_signed_array
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore
from simhash_pg.store.retention import purge

SIZE = (
    "SELECT sum(pg_total_relation_size(relid)) FROM (SELECT 'simhash_documents'::regclass"
    " AS relid UNION SELECT relid FROM pg_partition_tree('simhash_documents')) AS t"
    " UNION ALL SELECT coalesce(pg_total_relation_size(to_regclass('simhash_keys')), 0)"
)


def _open(dsn: str, plain: bool) -> SimhashStore:
    if plain:
        # the store refuses an old schema; the plain table is what we compare with
        with mock.patch.object(migrate, "HEAD", "0003"):
            return SimhashStore(dsn, migrate=False)
    return SimhashStore(dsn)


def _mib(conn: psycopg.Connection[Any]) -> str:
    docs, keys = (r[0] for r in conn.execute(SIZE).fetchall())
    return f"{int(docs) / 2**20:,.0f} MiB (+ keys {int(keys) / 2**20:,.0f} MiB)"


def _spread(conn: psycopg.Connection[Any], fps: np.ndarray, parted: bool) -> float:
    t = time.perf_counter()
    conn.execute("TRUNCATE simhash_documents")
    if parted:
        conn.execute("SELECT simhash_create_partition((now() AT TIME ZONE 'UTC')::date - d)"
                     " FROM generate_series(1, 4) AS d")
    n = len(fps)
    conn.execute(
        "INSERT INTO simhash_documents (id, fingerprint, created_at)"
        " SELECT u.i, u.fp, now() - ((%s - u.i)::float8 / %s) * interval '4 days'"
        " FROM unnest(%s::bigint[]) WITH ORDINALITY AS u (fp, i)",
        [n, n, to_signed_array(fps).tolist()],
    )
    conn.execute("SELECT setval(pg_get_serial_sequence('simhash_documents', 'id'), %s)", [n])
    conn.execute("VACUUM (ANALYZE) simhash_documents")
    return time.perf_counter() - t


def _alternate(n: int, a: Callable[[int], float], b: Callable[[int], float]
               ) -> tuple[list[float], list[float]]:
    ta: list[float] = []
    tb: list[float] = []
    for i in range(n):
        if i % 2:
            ta.append(a(i))
            tb.append(b(i))
        else:
            tb.append(b(i))
            ta.append(a(i))
    return ta, tb


def _near_ms(store: SimhashStore, queries: list[int], k: int, i: int) -> float:
    return timed_ms(lambda: store.near(queries[i], k=k))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    n = args.n
    with scratch_dsn(dbname="plain") as plain_dsn:
        with store_connect(plain_dsn) as c:
            c.execute("CREATE DATABASE parted")
            version = c.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        parted_dsn = make_conninfo(plain_dsn, dbname="parted")
        migrate.upgrade(plain_dsn, "0003")
        migrate.upgrade(parted_dsn)
        print(f"plain (0003) vs partitioned (0005): n={n:,}, PostgreSQL {version}, "
              f"{__import__('os').cpu_count()} cores")
        fps = make_data(n, args.seed, False)
        stores = {"plain": _open(plain_dsn, True), "parted": _open(parted_dsn, False)}

        # 1. bulk_load
        rates: dict[str, list[float]] = {"plain": [], "parted": []}
        for rnd in range(2):
            for name in (("plain", "parted") if rnd % 2 == 0 else ("parted", "plain")):
                st = stores[name]
                st.connection.execute("TRUNCATE simhash_documents")
                t = time.perf_counter()
                st.bulk_load(fps)
                rates[name].append(n / (time.perf_counter() - t))
        for name, r in rates.items():
            print(f"bulk_load {name:>6}: {max(r):,.0f} rows/s best of 2 "
                  f"({', '.join(f'{x:,.0f}' for x in r)})")
        print(f"  ratio partitioned/plain: {max(rates['parted']) / max(rates['plain']):.2f}")

        qs = {k: queries_for(fps, args.queries, k, args.seed + k) for k in (3, 6)}
        # near() on the bulk-loaded rows: one full partition + 3 empty ones + default
        for k in (3, 6):
            ta, tb = _alternate(
                len(qs[k]),
                partial(_near_ms, stores["plain"], qs[k], k),
                partial(_near_ms, stores["parted"], qs[k], k),
            )
            print(f"near() k={k} after bulk_load (parted: rows in 1 of 4 partitions): "
                  f"plain p50 {pct(ta, 50):.3f} / p99 {pct(ta, 99):.3f} ms, "
                  f"parted p50 {pct(tb, 50):.3f} / p99 {pct(tb, 99):.3f} ms, "
                  f"p50 ratio {pct(tb, 50) / pct(ta, 50):.2f}")

        # 2. spread over 4 days
        for name in ("plain", "parted"):
            sec = _spread(stores[name].connection, fps, name == "parted")
            parts = stores[name].connection.execute(
                "SELECT count(*) FROM (SELECT 'simhash_documents'::regclass AS relid UNION"
                " SELECT relid FROM pg_partition_tree('simhash_documents') WHERE isleaf) AS t"
                " WHERE relid::regclass::text <> 'simhash_documents' OR NOT EXISTS"
                " (SELECT 1 FROM pg_inherits WHERE inhparent = 'simhash_documents'::regclass)"
            ).fetchone()[0]  # type: ignore[index]
            print(f"spread {name:>6} over 4 days: {sec:.1f} s, {parts} leaf relations, "
                  f"{_mib(stores[name].connection)}")
        for k in (3, 6):
            for name in ("plain", "parted"):  # warm both
                for q in qs[k][:50]:
                    stores[name].near(q, k=k)
            ta, tb = _alternate(
                len(qs[k]),
                partial(_near_ms, stores["plain"], qs[k], k),
                partial(_near_ms, stores["parted"], qs[k], k),
            )
            same = all(stores["plain"].near(q, k=k) == stores["parted"].near(q, k=k)
                       for q in qs[k][:100])
            print(f"near() k={k}, rows over 7 partitions: plain p50 {pct(ta, 50):.3f} / "
                  f"p99 {pct(ta, 99):.3f} ms, parted p50 {pct(tb, 50):.3f} / "
                  f"p99 {pct(tb, 99):.3f} ms, p50 ratio {pct(tb, 50) / pct(ta, 50):.2f}; "
                  f"answers of 100 queries equal: {same}")

        # 3. writes with keys
        rng = np.random.default_rng(args.seed + 9)
        new = [int(x) for x in rng.integers(0, 2**63, size=40_000, dtype=np.uint64)]
        chunks = [new[i:i + 2000] for i in range(0, 20_000, 2000)]
        ta, tb = _alternate(
            len(chunks),
            lambda i: timed_ms(lambda: stores["plain"].add_many(
                [Doc(fp, f"u{i}-{j}") for j, fp in enumerate(chunks[i])], batch_size=1000)),
            lambda i: timed_ms(lambda: stores["parted"].add_many(
                [Doc(fp, f"u{i}-{j}") for j, fp in enumerate(chunks[i])], batch_size=1000)),
        )
        print(f"add_many with keys (dedup, batches of 1000, 20,000 docs): "
              f"plain {20_000 / sum(ta) * 1000:,.0f} docs/s, "
              f"parted {20_000 / sum(tb) * 1000:,.0f} docs/s, "
              f"ratio {sum(ta) / sum(tb):.2f}")
        for st in stores.values():
            st.connection.execute("SET synchronous_commit = off")
        single = new[20_000:21_000]
        ta, tb = _alternate(
            len(single),
            lambda i: timed_ms(lambda: stores["plain"].add(single[i], key=f"s{i}")),
            lambda i: timed_ms(lambda: stores["parted"].add(single[i], key=f"s{i}")),
        )
        ma, mb = statistics.median(ta), statistics.median(tb)
        print(f"add() with a key (dedup, synchronous_commit off, 1,000 each): "
              f"plain p50 {ma:.3f} ms, parted p50 {mb:.3f} ms, ratio {mb / ma:.2f}")

        # 4. purge everything older than 2 days
        for name in ("plain", "parted"):
            conn = stores[name].connection
            before = _mib(conn)
            res = purge(conn, "2d")
            conn.execute("VACUUM simhash_documents")
            print(f"purge 2d {name:>6}: {res.deleted:,} rows in {res.seconds:.2f} s "
                  f"({len(res.dropped)} partitions dropped, {res.batches} DELETE batches); "
                  f"size {before} -> {_mib(conn)} after VACUUM")
        # near() once the window is 2 days: parted has the partly old day,
        # yesterday, today, 1 ahead and the default partition (5 leaves)
        for k in (3,):
            ta, tb = _alternate(
                len(qs[k]),
                partial(_near_ms, stores["plain"], qs[k], k),
                partial(_near_ms, stores["parted"], qs[k], k),
            )
            print(f"near() k={k} after the purge (parted: 5 partitions): plain p50 "
                  f"{pct(ta, 50):.3f} / p99 {pct(ta, 99):.3f} ms, parted p50 {pct(tb, 50):.3f}"
                  f" / p99 {pct(tb, 99):.3f} ms, p50 ratio {pct(tb, 50) / pct(ta, 50):.2f}")
        for st in stores.values():
            st.close()


if __name__ == "__main__":
    main()
