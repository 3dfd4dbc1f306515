"""Adds through a day: add_many's rate as today's partition grows, beside yesterday's.

    uv run simhash-pg bench day --per-day 24000000

Issue 17, item 2: the seeds' load is ~24M documents a day kept 2 days, so a
store holds yesterday's full daily partition and today's, which grows from
empty to 24M rows. Adding those rows one by one would take the day itself,
so each point of the day is laid out directly: yesterday's partition and
today's at 0, 1/4, ... of a day are filled by binary COPY into a plain table
and attached (index builds, as bulk_load), then prewarmed. At each point 2
client processes run ``add_many`` of new fingerprints, ``dedup=True`` then
``dedup=False`` (the store's own write floor), each from a CHECKPOINT for
``--seconds``, in 5,000-row batches with one durable commit each; the rate is
printed per window, with the WAL and full-page images per row (pg_stat_wal),
since page images after a checkpoint are what random index inserts pay.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
from datetime import date, timedelta
from typing import Any

import click
import numpy as np
import psycopg
from psycopg import sql

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.stream import _prewarm
from lab.connect import connect as store_connect
from simhash_pg.store.pgcopy import copy_fingerprints
from simhash_pg.store.planner_stats import forget_empty_stats

__all__ = ["command", "fill_day", "fill_span"]

_BATCH = 5_000


def _random(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64 - 1, size=n, dtype=np.uint64,
                                                endpoint=True)


def fill_day(conn: psycopg.Connection[Any], day: date, fps: np.ndarray, first_id: int) -> float:
    """Make ``day``'s partition hold exactly ``fps`` (ids from ``first_id``); seconds."""
    return fill_span(conn, day, day + timedelta(days=1), [(day, fps, first_id)])


def fill_span(conn: psycopg.Connection[Any], lo: date, hi: date,
              pieces: list[tuple[date, np.ndarray, int]]) -> float:
    """Make one partition for [lo, hi) hold exactly the pieces' rows; seconds.

    Each piece is (the day its rows were added, uint64 fingerprints, first id).
    Partitions overlapping the span go first. The rows go into a plain table
    by binary COPY, which is then attached: PostgreSQL builds the parent's
    indexes on it, as after a bulk load.
    """
    t = time.perf_counter()
    name = f"simhash_documents_p{lo:%Y%m%d}"
    for (old,) in conn.execute(
            "SELECT partition::text FROM simhash_partitions() WHERE NOT is_default"
            " AND lower_bound < %s AND upper_bound > %s", [hi, lo]).fetchall():
        conn.execute(f"ALTER TABLE simhash_documents DETACH PARTITION {old}")
        conn.execute(f"DROP TABLE {old}")
    # one transaction: a table created in it takes COPY FREEZE (bulk_load's path)
    with conn.transaction():
        conn.execute(f"CREATE TABLE {name} (LIKE simhash_documents INCLUDING DEFAULTS"
                     " INCLUDING GENERATED)")
        for day, fps, first_id in pieces:
            conn.execute(f"ALTER TABLE {name} ALTER created_at SET DEFAULT"
                         f" '{day.isoformat()} 12:00+00'::timestamptz")
            copy_fingerprints(conn, fps, first_id, sql.Identifier(name))
    conn.execute(f"ALTER TABLE simhash_documents ATTACH PARTITION {name}"
                 f" FOR VALUES FROM ('{lo.isoformat()} 00:00+00') TO ('{hi.isoformat()} 00:00+00')")
    conn.execute(f"VACUUM (ANALYZE) {name}")
    forget_empty_stats(conn)  # an empty one: as the store leaves it (planner_stats.py)
    return time.perf_counter() - t


def _client(dsn: str, fps: np.ndarray, dedup: bool, seconds: float, ready: Any, go: Any,
            results: Any) -> None:
    """Batches from ``go`` until the deadline: (seconds since go at its commit, rows) each."""
    from simhash_pg.store import SimhashStore

    out: list[tuple[float, int]] = []
    with SimhashStore(dsn) as store:
        store.add_many([int(fps[-1])], dedup=dedup)  # imports, prepared statements
        ready.put(None)
        go.wait()
        start_at = time.time()
        for start in range(0, len(fps) - 1, _BATCH):
            if time.time() >= start_at + seconds:
                break
            chunk = [int(x) for x in fps[start : min(start + _BATCH, len(fps) - 1)]]
            store.add_many(chunk, dedup=dedup, batch_size=_BATCH)
            out.append((time.time() - start_at, len(chunk)))
    results.put(out)


def _wal(conn: psycopg.Connection[Any]) -> tuple[int, int, int]:
    """Full-page images and WAL bytes written so far, and checkpoints requested."""
    row = conn.execute("SELECT wal_fpi, wal_bytes::bigint FROM pg_stat_wal").fetchone()
    assert row is not None
    try:  # PostgreSQL 17+
        req = conn.execute("SELECT num_requested FROM pg_stat_checkpointer").fetchone()
    except psycopg.errors.UndefinedTable:
        req = conn.execute("SELECT checkpoints_req FROM pg_stat_bgwriter").fetchone()
    return int(row[0]), int(row[1]), int(req[0]) if req else 0


def _phase(dsn: str, conn: psycopg.Connection[Any], dedup: bool, clients: int,
           seconds: float, windows: int, seed: int, wal: str = "") -> dict[str, Any]:
    # more than any client can add in the time
    per = int(seconds * 40_000)
    if wal:  # the writers' sessions compress their page images so (a superuser setting)
        dsn = psycopg.conninfo.make_conninfo(dsn, options=f"-c wal_compression={wal}")
    ctx = multiprocessing.get_context("spawn")
    ready, go, results = ctx.Queue(), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_client, args=(dsn, _random(per, seed + c), dedup, seconds,
                                                ready, go, results))
             for c in range(clients)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get()
    conn.execute("CHECKPOINT")
    fpi0, bytes0, ckpt0 = _wal(conn)
    go.set()
    batches = [b for _ in procs for b in results.get()]
    for proc in procs:
        proc.join()
    fpi1, bytes1, ckpt1 = _wal(conn)
    rows = sum(n for _, n in batches)
    took = max((t for t, _ in batches), default=seconds)
    edges = np.linspace(0, took, windows + 1)
    per_window = [sum(n for t, n in batches if lo < t <= hi) / (hi - lo)
                  for lo, hi in itertools.pairwise(edges.tolist())]
    return {"rows": rows, "rate": rows / took, "windows": per_window,
            "fpi_per_row": (fpi1 - fpi0) / max(rows, 1),
            "wal_per_row": (bytes1 - bytes0) / max(rows, 1),
            # requested during the run: WAL reached max_wal_size
            "checkpoints": ckpt1 - ckpt0}


@click.command("day")
@click.option("--per-day", type=click.IntRange(1000), default=24_000_000, show_default=True,
              help="Rows a day: yesterday's partition holds this many, today's grows to it.")
@click.option("--at", "at", default="0,0.25,0.5,0.75,1", show_default=True,
              help="Points of the day measured: today's partition at these fractions of a "
              "day's rows (comma-separated).")
@click.option("--clients", type=click.IntRange(1), default=2, show_default=True)
@click.option("--seconds", type=click.FloatRange(1), default=60.0, show_default=True,
              help="Time per writer and point.")
@click.option("--windows", type=click.IntRange(1), default=4, show_default=True,
              help="The rate is printed in this many windows of each run.")
@click.option("--max-wal-size", default=None,
              help="The throwaway server's max_wal_size (e.g. 6GB) instead of the large "
              "store's (the RAM, at most 64 GB): how often WAL volume forces a checkpoint.")
@click.option("--wal-compression", "wal", default="",
              help="Run each writer once per value (comma-separated: off, pglz, lz4, on), "
              "side by side: how its page images are compressed. Default: the server's.")
@click.option("--interval", type=click.Choice(["day", "week"]), default="day",
              show_default=True,
              help="The store's partition interval: week puts yesterday and today in one "
              "partition (this week's), so a look-up probes one filled partition, not two.")
@click.option("--texts", is_flag=True,
              help="Text rows and verified text adds instead (lab/bench/day_texts.py): the "
              "store of a user's day, grown point by point; 2 clients add() texts.")
@click.option("--text-chars", type=click.IntRange(20), default=400, show_default=True,
              help="With --texts: the rows' verification text length (mean; letters).")
@click.option("--boilerplate", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help="With --texts: share of rows that hold a shared key (as bench scale).")
@click.option("--stored", type=click.IntRange(10), default=3000, show_default=True,
              help="With --texts: real texts stored by the product after yesterday's rows "
              "(the adds' edited copies find them).")
@click.option("--duplicates", type=click.FloatRange(0, 1), default=0.25, show_default=True,
              help="With --texts: the share of added texts that are edited copies of stored "
              "ones (the rest are new).")
@click.option("--again", is_flag=True,
              help="With --texts and --dsn: the adds once more on the store an earlier run "
              "left, at its size, for --seconds: no fill, no checkpoint (the server's cache "
              "as it is). Give the earlier run's --corpus and --stored.")
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), multiple=True,
              help="With --texts: real texts instead of synthetic news (JSONL, a 'text' per "
              "line; repeatable): --stored of them are stored, the rest are new texts.")
@click.option("--seed", type=int, default=1, show_default=True)
@scratch_options
@click.pass_context
def command(ctx: click.Context, per_day: int, at: str, clients: int, seconds: float,
            windows: int, max_wal_size: str | None, wal: str, interval: str, texts: bool,
            text_chars: int, boilerplate: float, stored: int, duplicates: float,
            again: bool, corpus: tuple[str, ...], seed: int, dsn: str | None, home: str | None,
            keep: bool) -> None:
    """add_many docs/s as today's partition grows to a day of rows, yesterday's full
    (with --texts: verified text adds in a store of text rows)."""
    from simhash_pg.db.server import sized_settings

    try:
        points = [float(x) for x in at.split(",")]
    except ValueError:
        raise click.BadParameter(f"comma-separated fractions, got {at!r}",
                                 param_hint="--at") from None
    if not points or any(not 0 <= x <= 1 for x in points):
        raise click.BadParameter(f"fractions between 0 and 1, got {at!r}", param_hint="--at")
    settings = sized_settings(large=True)
    if max_wal_size:
        settings["max_wal_size"] = max_wal_size
    wals = [w.strip() for w in wal.split(",") if w.strip()]
    bad = [w for w in wals if w not in ("off", "on", "pglz", "lz4")]
    if bad:
        raise click.BadParameter(f"off, on, pglz or lz4, got {bad[0]!r}",
                                 param_hint="--wal-compression")
    default = click.core.ParameterSource.DEFAULT
    given = {name for name in ("text_chars", "boilerplate", "stored", "duplicates", "again",
                               "corpus") if ctx.get_parameter_source(name) is not default}
    if not texts and given:
        raise click.UsageError(f"--{min(given).replace('_', '-')} goes with --texts")
    if texts and (wals or interval != "day"):
        raise click.UsageError("--texts measures the daily layout with the server's WAL "
                               "settings: no --wal-compression or --interval")
    if not texts:
        with scratch_dsn(dsn, home=home, keep=keep, settings=settings) as url:
            _run(url, per_day, points, clients, seconds, windows, seed, wals or [""],
                 interval)
        return
    from lab.bench import day_texts
    from lab.bench import text as bench_text

    if sorted(points) != points or len(set(points)) < len(points):
        raise click.BadParameter(f"with --texts the store grows: rising fractions, got {at!r}",
                                 param_hint="--at")
    if again and dsn is None:
        raise click.UsageError("--again measures an earlier run's store: give its --dsn")
    if corpus:  # module state of bench text, set before the add clients are forked
        real = bench_text.read_corpus(corpus, seed)
        bench_text._STORED[:], bench_text._HELD[:] = real[:stored], real[stored:]
    try:
        if again:
            assert dsn is not None
            day_texts.again(dsn, clients, seconds, windows, seed, duplicates, stored)
            return
        with scratch_dsn(dsn, home=home, keep=keep, settings=settings) as url:
            day_texts.run(url, per_day, points, clients, seconds, windows, seed, text_chars,
                          boilerplate, stored, duplicates)
    finally:
        bench_text._STORED.clear()
        bench_text._HELD.clear()
        day_texts._SYNTHETIC.clear()


def _run(dsn: str, per_day: int, points: list[float], clients: int, seconds: float,
         windows: int, seed: int, wals: list[str] | None = None, interval: str = "day") -> None:
    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    with SimhashStore(dsn, partition_interval=interval):  # type: ignore[arg-type]
        pass  # the current partition, the next one and the default
    with store_connect(dsn) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        settings = conn.execute(
            "SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ', ' ORDER BY name)"
            " FROM pg_settings WHERE name IN ('shared_buffers', 'max_wal_size',"
            " 'checkpoint_timeout', 'wal_compression', 'synchronous_commit')").fetchone()[0]  # type: ignore[index]
        today = conn.execute("SELECT (now() AT TIME ZONE 'UTC')::date").fetchone()[0]  # type: ignore[index]
        layout = ("yesterday's rows and today's in this week's partition" if interval == "week"
                  else "yesterday's partition full")
        echo(f"simhash-pg bench day: {per_day:,} rows a day, {layout},"
             f" today's at {', '.join(f'{x:g}' for x in points)} of a day,"
             f" {clients} clients x {seconds:g} s per writer,"
             f" seed={seed}")
        echo(f"PostgreSQL {version}, {multiprocessing.cpu_count()} cores, {settings},"
             f" load average {os.getloadavg()[0]:.1f}")
        yesterday = today - timedelta(days=1)
        monday = today - timedelta(days=today.weekday())
        weekly = interval == "week" and yesterday >= monday
        if interval == "week" and not weekly:
            echo("today is a Monday: yesterday is last week's partition, as with days")
        if not weekly:
            t = fill_day(conn, yesterday, _random(per_day, seed), 1)
            echo(f"yesterday: {per_day:,} rows by COPY + attach in {t:.0f} s")
        today_fps = _random(per_day, seed + 1)
        head = (f"{'today rows':>11} {'writer':<24} {'docs/s':>8} "
                f"{'per window':<34} {'FPI/row':>8} {'WAL B/row':>9} {'ckpts':>5}")
        rows_out = []
        for p, fraction in enumerate(points):
            size = int(per_day * fraction)
            if weekly:  # both days in this week's partition
                t = fill_span(conn, monday, monday + timedelta(days=7),
                              [(yesterday, _random(per_day, seed), 1),
                               (today, today_fps[:size], per_day + 1)])
            else:
                t = fill_day(conn, today, today_fps[:size], per_day + 1)
            conn.execute("SELECT setval(pg_get_serial_sequence('simhash_documents', 'id'), %s)",
                         [per_day + size + 1])
            warmed = _prewarm(conn)
            echo(f"today at {size:,} rows: COPY + attach in {t:.0f} s, {warmed}")
            for dedup, wal in itertools.product((True, False), wals or [""]):
                got = _phase(dsn, conn, dedup, clients, seconds, windows,
                             seed + 100 * (p + 1) + dedup, wal)
                writer = f"dedup={dedup}" + (f" wal_comp={wal}" if wal else "")
                line = (f"{size:>11,} {writer:<24} {got['rate']:>8,.0f} "
                        f"{' '.join(f'{w:,.0f}' for w in got['windows']):<34} "
                        f"{got['fpi_per_row']:>8.2f} {got['wal_per_row']:>9,.0f}"
                        f" {got['checkpoints']:>5}")
                echo(line)
                rows_out.append(line)
        echo("")
        echo(head)
        echo("-" * len(head))
        for line in rows_out:
            echo(line)
    echo("add_many of new fingerprints, 5,000 a batch and a commit; each run starts at a "
         "CHECKPOINT (FPI: full-page images written per row; ckpts: checkpoints WAL volume "
         "requested during the run). Target (issue 17): "
         "dedup=True >= 10,000 docs/s through the day.")
