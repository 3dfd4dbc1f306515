"""``simhash-pg bench store``: load, search and storage figures for the store.

Runs on a throwaway PostgreSQL (a temporary data directory, deleted at the
end unless --keep) started from the embedded binaries with the settings the
store's own embedded server uses, or on --dsn (a database the benchmark may
fill and empty: it must not hold a store you care about).

Data: uniform random fingerprints, 10% of them planted near-duplicates
(1..3 bits from an earlier one); --skew puts 10% of documents into 1% of the
block values, as real corpora do. Every figure is printed next to a same-run
baseline (the brute-force scan; for add_many, the plain-COPY floor of
lab/bench/floor.py). --writes-only measures the load, the floor and the
adds alone.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
from functools import partial
from typing import Any

import click
import numpy as np

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.stream import _prewarm
from lab.bench.timing import pct, timed_ms
from lab.connect import connect as store_connect
from simhash_pg.bits import BLOCK_SHIFTS
from simhash_pg.cli.options import k_option

VARIANTS: dict[str, str] = {
    # name -> index definition for block i, j = i + 1 mod 4 (adjacent is the
    # migrations' layout since revision 0004, pair that of 0001-0003)
    "adjacent": "(b{i}, b{j}, fingerprint) WITH (deduplicate_items = off)",
    "pair": "(b{i}, fingerprint) WITH (deduplicate_items = off)",
    "include": "(b{i}) INCLUDE (fingerprint)",
    "single": "(b{i})",
}


def make_data(n: int, seed: int, skew: bool,
              plants: list[np.ndarray] | None = None) -> np.ndarray:
    """``plants``, if given, receives the planted rows' positions and their sources'."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
    if skew:
        hot = rng.integers(0, 65536, size=655, dtype=np.uint64)  # 1% of block values
        rows = rng.choice(n, size=n // 10, replace=False)
        for shift in BLOCK_SHIFTS:
            vals = hot[rng.integers(0, len(hot), size=len(rows))]
            mask = np.uint64(0xFFFF) << np.uint64(shift)
            fps[rows] = (fps[rows] & ~mask) | (vals << np.uint64(shift))
    # planted near-duplicates: 10% of rows copy an earlier row with 1..3 bits flipped
    dup = (rng.choice(np.arange(1, n), size=n // 10, replace=False) if n > 1
           else np.array([], dtype=np.int64))
    src = (rng.random(len(dup)) * dup).astype(np.int64)
    flips = np.zeros(len(dup), dtype=np.uint64)
    nbits = rng.integers(1, 4, size=len(dup))
    for j in range(3):
        bit = rng.integers(0, 64, size=len(dup)).astype(np.uint64)
        flips |= np.where(nbits > j, np.uint64(1) << bit, np.uint64(0))
    fps[dup] = fps[src] ^ flips
    if plants is not None:
        plants += [dup, src]
    return fps


def queries_for(fps: np.ndarray, count: int, k: int, seed: int) -> list[int]:
    """Half near a stored fingerprint (0..k bits away), half random."""
    rng = np.random.default_rng(seed + 1)
    out: list[int] = []
    for i in range(count):
        if i % 2 == 0:
            fp = int(fps[rng.integers(0, len(fps))])
            for bit in rng.choice(64, size=int(rng.integers(0, k + 1)), replace=False):
                fp ^= 1 << int(bit)
        else:
            fp = int(rng.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True))
        out.append(fp)
    return out


def latency(store: Any, qs: list[int], k: int) -> tuple[float, float, float, float]:
    for q in qs[:100]:  # warm-up: caches, prepared statements
        store.near(q, k=k)
    times = [timed_ms(partial(store.near, q, k=k)) for q in qs]
    return pct(times, 50), pct(times, 95), pct(times, 99), statistics.fmean(times)


def _client(dsn: str, qs: list[int], k: int, seconds: float, out: Any) -> None:
    from simhash_pg.store import SimhashStore

    with SimhashStore(dsn) as store:
        for q in qs[:50]:
            store.near(q, k=k)
        done = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            store.near(qs[done % len(qs)], k=k)
            done += 1
        out.put(done)


def throughput(dsn: str, qs: list[int], k: int, clients: int, seconds: float) -> float:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_client, args=(dsn, qs[i::clients], k, seconds, out))
        for i in range(clients)
    ]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


def sizes(conn: Any) -> dict[str, int]:
    # summed over the partitions (pg_partition_tree lists nothing for a
    # plain table or index: the relation itself is added)
    rows = conn.execute(
        "SELECT c.relname, (SELECT coalesce(sum(pg_relation_size(t.relid)), 0) FROM"
        " (SELECT c.oid::regclass AS relid UNION SELECT relid FROM pg_partition_tree(c.oid))"
        " AS t) FROM pg_class c"
        " WHERE c.oid = 'simhash_documents'::regclass OR c.oid IN"
        " (SELECT indexrelid FROM pg_index WHERE indrelid = 'simhash_documents'::regclass)"
    ).fetchall()
    out = {r[0]: int(r[1]) for r in rows}
    out["_table_total"] = int(
        conn.execute(
            "SELECT sum(pg_table_size(relid)) FROM (SELECT 'simhash_documents'::regclass"
            " AS relid UNION SELECT relid FROM pg_partition_tree('simhash_documents')) AS t"
        ).fetchone()[0]
    )
    return out


def set_variant(conn: Any, variant: str) -> float:
    """Rebuild the block indexes as ``variant``; new sessions get the matching k <= 3 form."""
    cols = VARIANTS[variant]
    t = time.perf_counter()
    for i in range(4):
        conn.execute(f"DROP INDEX IF EXISTS simhash_documents_b{i}_idx")
        conn.execute(
            f"CREATE INDEX simhash_documents_b{i}_idx ON simhash_documents"
            f" {cols.format(i=i, j=(i + 1) % 4)}"
        )
    conn.execute("VACUUM (ANALYZE) simhash_documents")
    # The pair probes of sql/0004 need the adjacent layout; on the others the
    # single-block form of k <= 3 is the one that fits (new sessions only).
    db = conn.execute("SELECT current_database()").fetchone()[0]
    if variant == "adjacent":
        conn.execute(f'ALTER DATABASE "{db}" RESET simhash.pair_probe_min_rows')
    else:
        conn.execute(f'ALTER DATABASE "{db}" SET simhash.pair_probe_min_rows = \'1e30\'')
    return time.perf_counter() - t


def candidates(conn: Any, qs: list[int], k: int, pairs: bool = False) -> tuple[float, int]:
    """Index entries examined per query (sum over the four block probes).

    Single-block form: every entry whose block i is within k/4 bits.
    ``pairs``: the pair form (sql/0006): of those, the entries whose block
    i+1 is within k/2 bits too, the rows the Hamming check sees (the btree
    skips the others inside its pages).
    """
    from simhash_pg.bits import to_signed

    where = [f"b{i} = ANY(a[{i + 1}:{i + 1}])" + (
        f" AND b{(i + 1) % 4} = ANY(p[{(i + 1) % 4 + 1}:{(i + 1) % 4 + 1}])" if pairs else "")
        for i in range(4)]
    counts = []
    for q in qs:
        row = conn.execute(
            "SELECT " + " + ".join(
                f"(SELECT count(*) FROM simhash_documents WHERE {w})" for w in where)
            + " FROM (SELECT simhash_probe_sets(%(q)s, %(r1)s) a,"
            " simhash_probe_sets(%(q)s, %(r2)s) p) x",
            {"q": to_signed(q), "r1": k // 4, "r2": k // 2},
        ).fetchone()
        counts.append(int(row[0]))
    return statistics.fmean(counts), max(counts)


def seq_scan_ms(conn: Any, qs: list[int], k: int) -> tuple[float, float]:
    from simhash_pg.bits import to_signed

    def scan(q: int) -> None:
        conn.execute(
            "SELECT id, key, simhash_hamming(fingerprint, %s) FROM simhash_documents"
            " WHERE simhash_hamming(fingerprint, %s) <= %s",
            [to_signed(q), to_signed(q), k],
        ).fetchall()

    times = [timed_ms(partial(scan, q)) for q in qs]
    return pct(times, 50), statistics.fmean(times)


@click.command("store")
@click.option("--n", "n", type=click.IntRange(1000), default=1_000_000, show_default=True,
              help="Rows to load.")
@click.option("--queries", type=click.IntRange(100), default=1000, show_default=True)
@k_option(default=3)
@click.option("--extra-k", default="6,10", show_default=True,
              help="Also measure near() at these k (comma-separated; empty for none).")
@click.option("--index-variant", "variants", default="adjacent", show_default=True,
              help="Block index layouts to measure, comma-separated: adjacent ="
                   " (b_i, b_i+1, fingerprint) (the migrations' layout), pair ="
                   " (b_i, fingerprint), include = (b_i) INCLUDE (fingerprint),"
                   " single = (b_i), or all.")
@click.option("--skew", is_flag=True, help="10% of documents in 1% of the block values.")
@click.option("--clients", type=click.IntRange(1, 64), default=2, show_default=True)
@click.option("--add-rows", type=click.IntRange(0), default=100_000, show_default=True,
              help="Rows for each add_many measurement into the populated store.")
@click.option("--writes-only", is_flag=True,
              help="Only the load, the floor and the adds (no read measurements).")
@click.option("--floor-server", is_flag=True,
              help="Keep the plain-COPY floor in a second embedded server, each server"
                   " sized for half the machine's memory: at 50M rows the store and the"
                   " floor table do not fit one server's memory together, and each"
                   " would evict the other's pages.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--explain/--no-explain", default=True, show_default=True,
              help="Print EXPLAIN (ANALYZE, BUFFERS) of simhash_near.")
@scratch_options
def command(n: int, queries: int, k: int, extra_k: str, variants: str, skew: bool,
            clients: int, add_rows: int, writes_only: bool, floor_server: bool, seed: int,
            explain: bool, dsn: str | None, home: str | None, keep: bool) -> None:
    """Load N fingerprints, then measure near(), the seq scan, add_many and sizes."""
    chosen = list(VARIANTS) if variants == "all" else [v.strip() for v in variants.split(",")]
    for v in chosen:
        if v not in VARIANTS:
            raise click.BadParameter(f"unknown variant {v!r}", param_hint="--index-variant")
    ks = [int(x) for x in extra_k.split(",") if x.strip()]

    if not floor_server:
        with scratch_dsn(dsn, home=home, keep=keep) as url:
            _run(url, n, queries, k, ks, chosen, skew, clients, add_rows, seed, explain,
                 writes_only)
        return
    from simhash_pg.db.server_settings import _total_memory, sized_settings

    half = sized_settings(_total_memory() // 2, large=True)
    with scratch_dsn(dsn, home=home, keep=keep, settings=half) as url, \
            scratch_dsn(settings=half, dbname="simhash_floor") as floor_url:
        _run(url, n, queries, k, ks, chosen, skew, clients, add_rows, seed, explain,
             writes_only, floor_url)


def _run(dsn: str, n: int, nq: int, k: int, ks: list[int], variants: list[str], skew: bool,
         clients: int, add_rows: int, seed: int, explain: bool, writes_only: bool = False,
         floor_dsn: str | None = None) -> None:
    from simhash_pg.bits import to_signed
    from simhash_pg.db import migrate
    from simhash_pg.db.server import memory_status
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    conn = store_connect(dsn)
    db = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
    conn.execute(f'ALTER DATABASE "{db}" RESET simhash.pair_probe_min_rows')
    version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    echo(f"simhash-pg bench store: n={n:,} k={k} skew={skew} seed={seed}")
    echo(f"PostgreSQL {version}, {memory_status(conn)}, {multiprocessing.cpu_count()} cores")

    t = time.perf_counter()
    fps = make_data(n, seed, skew)
    echo(f"data generated in {time.perf_counter() - t:.1f} s")
    qs = queries_for(fps, nq, k, seed)

    if variants[0] != "adjacent":
        set_variant(conn, variants[0])
    store = SimhashStore(dsn, k=k)
    t = time.perf_counter()
    phases: dict[str, float] = {}
    store.bulk_load(fps, timings=phases)
    load_s = time.perf_counter() - t
    builds = {name.removeprefix("build "): sec for name, sec in phases.items()
              if name.startswith("build ")}
    echo(f"initial bulk load ({variants[0]} indexes), COPY + index builds + VACUUM ANALYZE: "
         f"{load_s:.1f} s = {n / load_s:,.0f} rows/s ("
         + ", ".join(f"{name} {sec:.1f} s" for name, sec in phases.items()
                     if not name.startswith("build ")) + ")")
    echo("  index builds: " + ", ".join(f"{name} {sec:.1f} s" for name, sec in builds.items()))

    def report_sizes(label: str) -> None:
        sz = sizes(conn)
        table = sz.pop("_table_total")
        blocks_b = sum(v for name, v in sz.items() if "_b" in name and name.endswith("_idx"))
        idx = sum(v for name, v in sz.items() if name != "simhash_documents")
        rows = conn.execute("SELECT count(*) FROM simhash_documents").fetchone()[0]  # type: ignore[index]
        echo(f"  sizes [{label}]: table {table / rows:.1f} B/row, block indexes "
             f"{blocks_b / rows:.1f} B/row, all indexes {idx / rows:.1f} B/row, "
             f"total {(table + idx) / rows:.1f} B/row ({(table + idx) / 2**20:,.0f} MiB)")
        detail = ", ".join(f"{name.removeprefix('simhash_documents_')} {v / rows:.1f}"
                           for name, v in sorted(sz.items()) if name != "simhash_documents")
        echo(f"    per index (B/row): {detail}")

    # Index builds write their pages around shared_buffers: read them in once,
    # as a long-running store would have them (pg_prewarm ships with PostgreSQL),
    # as every bench's warm-up does (block indexes last).
    t = time.perf_counter()
    warmed = _prewarm(conn)
    echo(f"warm-up ({warmed}) in {time.perf_counter() - t:.1f} s")
    if writes_only:
        if add_rows:  # --add-rows 0: the load alone
            _adds(conn, store, fps, add_rows, seed, skew, k, floor_dsn)
        store.close()
        conn.close()
        return
    # the floor every query pays on this machine right now (shared, noisy)
    ping = [timed_ms(partial(lambda: conn.execute("SELECT 1", prepare=True).fetchall()))
            for _ in range(1000)]
    echo(f"baseline round trip SELECT 1 from Python: p50 {pct(ping, 50):.3f} ms, "
         f"p95 {pct(ping, 95):.3f} ms, p99 {pct(ping, 99):.3f} ms "
         f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    seq_p50, seq_mean = seq_scan_ms(conn, qs[:20], k)
    echo(f"brute-force scan (hamming <= {k} over every row, parallel allowed): "
         f"p50 {seq_p50:.1f} ms, mean {seq_mean:.1f} ms (20 queries)")

    results: dict[str, tuple[float, float, float, float]] = {}
    for i, variant in enumerate(variants):
        if i > 0:
            build = set_variant(conn, variant)
            echo(f"variant {variant}: rebuilt 4 block indexes + VACUUM ANALYZE in {build:.1f} s")
            store.close()
            store = SimhashStore(dsn, k=k)  # a new session: the variant's k <= 3 form
        p50, p95, p99, mean = latency(store, qs, k)
        results[variant] = (p50, p95, p99, mean)
        layout = VARIANTS[variant].format(i="_i", j="_i+1").split(" WITH")[0]
        echo(f"near() k={k} [{variant}: {layout}], {len(qs)} queries, "
             f"one connection, end to end from Python: p50 {p50:.3f} ms, p95 {p95:.3f} ms, "
             f"p99 {p99:.3f} ms, mean {mean:.3f} ms; {seq_p50 / p50:,.0f}x faster than the scan")
        report_sizes(variant)
    # the remaining measurements run on the migration's default layout
    if variants[-1] != "adjacent":
        set_variant(conn, "adjacent")
        store.close()
        store = SimhashStore(dsn, k=k)
        echo("(back to the default adjacent layout for the rest)")
    cmean, cmax = candidates(conn, qs[:200], k)
    echo(f"candidates examined per query (index entries over 4 probes, k={k}): "
         f"mean {cmean:,.1f}, max {cmax:,}")
    cmean, cmax = candidates(conn, qs[:200], k, pairs=True)
    echo(f"  of those, rows the Hamming check sees in the pair form (block i+1 within "
         f"{k // 2} bits too): mean {cmean:,.2f}, max {cmax:,}")
    for kx in ks:
        qx = queries_for(fps, min(nq, 300), kx, seed + kx)
        p50, p95, p99, mean = latency(store, qx, kx)
        cm, cx = candidates(conn, qx[:100], kx)
        pm, px = candidates(conn, qx[:100], kx, pairs=True) if kx <= 15 else (cm, cx)
        echo(f"near() k={kx}: p50 {p50:.3f} ms, p95 {p95:.3f} ms, p99 {p99:.3f} ms "
             f"({len(qx)} queries); index entries walked mean {cm:,.0f}, max {cx:,}; "
             f"rows Hamming-checked in the pair form mean {pm:,.1f}, max {px:,}")

    qps = throughput(dsn, qs, k, clients, 5.0)
    echo(f"near() throughput with {clients} client processes: {qps:,.0f} queries/s")

    # single adds: one round trip through simhash_add
    rng = np.random.default_rng(seed + 7)
    single = [int(x) for x in rng.integers(0, 2**64 - 1, size=1000, dtype=np.uint64,
                                           endpoint=True)]
    times = [timed_ms(partial(store.add, f)) for f in single]
    echo(f"add() one new document (dedup, k={k}; a durable commit each): "
         f"p50 {pct(times, 50):.3f} ms, p99 {pct(times, 99):.3f} ms")
    times = [timed_ms(partial(store.add, f ^ 1)) for f in single]
    echo(f"add() one near-duplicate (not stored: no commit to flush): "
         f"p50 {pct(times, 50):.3f} ms, p99 {pct(times, 99):.3f} ms")

    if add_rows:
        _adds(conn, store, fps, add_rows, seed, skew, k, floor_dsn)
        report_sizes("after adds")

    if explain:
        # near() is plpgsql: its inner statements' plans come from auto_explain
        q = qs[0]  # a planted neighbour: the plan includes the row fetch
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        conn.execute("LOAD 'auto_explain'")
        for setting in ("log_min_duration = 0", "log_nested_statements = on",
                        "log_analyze = on", "log_buffers = on", "log_level = notice"):
            conn.execute(f"SET auto_explain.{setting}")
        conn.execute("SELECT * FROM simhash_near(%s, %s)", [to_signed(q), k]).fetchall()
        conn.execute("SET auto_explain.log_min_duration = -1")
        echo(f"EXPLAIN (ANALYZE, BUFFERS) of SELECT * FROM simhash_near({to_signed(q)}, {k}),"
             " nested statements via auto_explain:")
        for note in notices:
            for line in note.splitlines():
                echo("  " + line)
    store.close()
    conn.close()


def _adds(conn: Any, store: Any, fps: np.ndarray, add_rows: int, seed: int, skew: bool,
          k: int, floor_dsn: str | None = None) -> None:
    """add_many into the populated store beside the plain-COPY floor (lab/bench/floor.py).

    Each add_many variant races a fresh floor round: batch for batch, each
    table gets the same rows in the same minutes (a CHECKPOINT first, so
    both start with every page owing its full-page image). ``floor_dsn``: the
    floor's own server (else the store's).
    """

    from lab.bench.floor import FLOOR_TABLE, copy_floor, make_floor_table, race

    floor = store_connect(floor_dsn) if floor_dsn else conn
    built = make_floor_table(floor, fps)
    where = "its own server" if floor_dsn else "the store's server"
    click.echo(f"floor table (bare, same layout, {len(fps):,} rows, in {where}) built in "
               f"{built:.1f} s")
    rng = np.random.default_rng(seed + 7)
    half = add_rows // 2
    src = fps[rng.integers(0, len(fps), size=half)]
    flips = np.uint64(1) << rng.integers(0, 64, size=half).astype(np.uint64)
    # half of these near-duplicate stored rows (1..3 bits), half are new
    mixed = np.concatenate([src ^ flips, make_data(add_rows - half, seed + 5, skew)])
    rng.shuffle(mixed)
    variants = {
        "add_many(dedup=False)": (make_data(add_rows, seed + 3, skew), False),
        "add_many(dedup=True, given fingerprints, all new)": (
            make_data(add_rows, seed + 11, skew), True),
        "add_many(dedup=True, given fingerprints, half near-duplicates)": (mixed, True),
    }
    batch = 5000
    for i, (name, (data, dedup)) in enumerate(variants.items()):
        conn.execute("CHECKPOINT")
        if floor is not conn:
            floor.execute("CHECKPOINT")
        counts = {"inserted": 0}

        def add(chunk: np.ndarray, dedup: bool = dedup, counts: dict[str, int] = counts) -> None:
            r = store.add_many([int(x) for x in chunk], dedup=dedup, k=k, batch_size=batch)
            counts["inserted"] += r.inserted

        floor_data = make_data(add_rows, seed + 100 + i, skew)
        rates = race({"floor": partial(copy_floor, floor), name: add},
                     {"floor": floor_data, name: data}, batch)
        click.echo(f"{name}: {rates[name]:,.0f} docs/s (inserted {counts['inserted']:,}) vs "
                   f"plain-COPY floor {rates['floor']:,.0f} rows/s, same size, same minutes: "
                   f"{rates[name] / rates['floor']:.2f}x the floor ({add_rows:,} rows each, "
                   f"batches of {batch:,})")
    floor.execute(f"DROP TABLE {FLOOR_TABLE}")
    if floor is not conn:
        floor.close()
