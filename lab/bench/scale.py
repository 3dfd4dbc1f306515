"""``simhash-pg bench scale``: text near() and verified adds in a store of text-shaped rows.

The other benchmarks fill the store with bare random fingerprints, which no
user's store holds, so they missed what a store of text rows costs: each row
keeps a verification text, a sentence signature and ~7 keys (a title ~20)
in ``sentence_hashes``, some of them boilerplate held by thousands of rows.
Here the store is filled as a user's would be (lab/bench/rows.py):

- ``--n`` rows of ``--kind`` news or titles, shaped as the product stores
  such texts, over two daily partitions (yesterday's and today's, half each:
  a two-day retention window), by binary COPY into the root table
  ``simhash_documents``, so that its row triggers fire as on any insert;
- VACUUM (ANALYZE), CHECKPOINT, prewarm; the table's and indexes' sizes;
- ``--texts`` real texts on top, stored by the product (``add_many``):
  ``--corpus`` ones, else synthetic news texts (as ``bench text``).

Then, side by side in one run under ``off``, ``short`` and ``all``, as
``bench text`` measures them (the same code): text near() p50/p99 over
edited copies of stored texts, the modes interleaved query by query, and
verified adds/s with ``--clients`` processes, the modes taking turns.

Runs on a throwaway server (deleted afterwards unless --keep), or on --dsn,
whose database it EMPTIES (downgrade to base, upgrade).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any

import click
import psycopg

from lab.bench import text as bench_text
from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.rows import FAMILY_SHARE, KINDS, SHARED_KEYS, Days, copy_rows, profile, shared_keys
from lab.bench.timing import pct

__all__ = ["command", "plan_shapes"]

# the store's tables (their partitions summed) and their indexes: simhash_documents
# and whatever tables its triggers keep beside it
_SIZES = """
WITH roots AS (
    SELECT oid, relname FROM pg_class
    WHERE relname LIKE 'simhash%' AND relkind IN ('r', 'p') AND NOT relispartition
), rels AS (
    SELECT oid, relname, relname AS of_table, false AS is_index FROM roots
    UNION ALL
    SELECT i.indexrelid, c.relname, r.relname, true FROM roots r
    JOIN pg_index i ON i.indrelid = r.oid JOIN pg_class c ON c.oid = i.indexrelid
)
SELECT r.of_table, r.relname, r.is_index, sum(CASE WHEN r.is_index
       THEN pg_relation_size(t.relid) ELSE pg_table_size(t.relid) END)::bigint AS size
FROM rels r CROSS JOIN LATERAL pg_partition_tree(r.oid) t WHERE t.isleaf
GROUP BY 1, 2, 3 ORDER BY sum(sum(CASE WHEN r.is_index THEN pg_relation_size(t.relid)
       ELSE pg_table_size(t.relid) END)) OVER (PARTITION BY r.of_table) DESC, 1, 3, 4 DESC
"""


@click.command("scale")
@click.option("--n", "n", type=click.IntRange(100), default=1_000_000, show_default=True,
              help="Synthetic text rows stored (COPY), half yesterday's, half today's.")
@click.option("--kind", type=click.Choice(KINDS), default="news", show_default=True,
              help="What the synthetic rows are shaped as.")
@click.option("--text-chars", type=click.IntRange(20), default=400, show_default=True,
              help="News rows' verification text length (mean; letters).")
@click.option("--boilerplate", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help=f"Share of rows that hold one of {SHARED_KEYS} shared keys (Zipf popularity).")
@click.option("--texts", type=click.IntRange(10), default=3000, show_default=True,
              help="Real texts stored through the product on top.")
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), multiple=True,
              help="Real texts instead of synthetic news: a JSONL file with a 'text' per "
              "line (e.g. ../shared/eval/corpus_en.jsonl; repeatable). --texts of them are "
              "stored, the rest are the adds' new texts.")
@click.option("--queries", type=click.IntRange(10), default=500, show_default=True,
              help="Text near() queries per mode.")
@click.option("--clients", type=click.IntRange(1), default=2, show_default=True)
@click.option("--seconds", type=click.FloatRange(1), default=10.0, show_default=True,
              help="Time per mode for the adds.")
@click.option("--rounds", type=click.IntRange(1), default=4, show_default=True,
              help="The adds' modes take turns in this many windows each.")
@click.option("--seed", type=int, default=1, show_default=True)
@scratch_options
def command(n: int, kind: str, text_chars: int, boilerplate: float, texts: int,
            corpus: tuple[str, ...], queries: int, clients: int, seconds: float, rounds: int,
            seed: int, dsn: str | None, home: str | None, keep: bool) -> None:
    """Text near() p50/p99 and verified adds/s under off, short and all, in a store of
    text-shaped rows."""
    if corpus:  # module state of bench text, set before its add clients are forked
        real = bench_text.read_corpus(corpus, seed)
        bench_text._STORED[:], bench_text._HELD[:] = real[:texts], real[texts:]
    try:
        with scratch_dsn(dsn, home=home, keep=keep) as url:
            _run(url, n, kind, text_chars, boilerplate, texts, queries, clients, seconds,
                 rounds, seed)
    finally:
        bench_text._STORED.clear()
        bench_text._HELD.clear()


def _run(dsn: str, n: int, kind: str, text_chars: int, boilerplate: float, texts: int,
         queries: int, clients: int, seconds: float, rounds: int, seed: int) -> None:
    from lab.bench.stream import _prewarm
    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore
    from simhash_pg.store.planner_stats import forget_empty_stats

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    real = bench_text._STORED
    source = (f"{len(real):,} corpus texts ({len(bench_text._HELD):,} held back for the adds)"
              if real else f"{texts:,} synthetic news texts")
    echo(f"simhash-pg bench scale: n={n:,} {kind} rows + {source}, {queries} queries per "
         f"mode, {clients} clients x {seconds:g} s per mode in {rounds} turns, seed={seed}")
    p = profile(kind, text_chars, seed)
    top = shared_keys(seed)[1]
    echo(f"{kind} rows as the product stores {len(p.texts):,} synthetic ones: "
         f"{p.chars:.0f} characters of verification text, {p.counts.mean():.2f} keys "
         f"(at most {p.width}), a signature in {100 * p.signed.mean():.0f}%; "
         f"{100 * boilerplate:g}% hold one of {SHARED_KEYS} shared keys (the most held: "
         f"{100 * boilerplate * top[0]:.1f}% of rows, the least {100 * boilerplate * top[-1]:.2f}%)"
         f"; {100 * FAMILY_SHARE:g}% are near copies (1-3 bits) of another")
    with psycopg.connect(dsn, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        echo(f"PostgreSQL {version}, {multiprocessing.cpu_count()} cores, load average "
             f"{os.getloadavg()[0]:.1f}")
        now = conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
        midnight = datetime.combine(now.astimezone(timezone.utc).date(), datetime.min.time(),
                                    timezone.utc)
        for day in (midnight - timedelta(days=1), midnight):
            conn.execute("SELECT simhash_create_partition(%s)", [day.date()])
        days = Days(*(int(x.timestamp() * 1_000_000)
                      for x in (midnight - timedelta(days=1), midnight, now)))

        def progress(rows: int, took: float) -> None:
            if rows < n:
                echo(f"  {rows:,} rows in {took:.0f} s ({rows / took:,.0f} rows/s)")

        t = time.perf_counter()
        copy_rows(conn, p, n, days, boilerplate, seed, progress)
        took = time.perf_counter() - t
        conn.execute("SELECT setval(pg_get_serial_sequence('simhash_documents', 'id'), %s)", [n])
        echo(f"fill: {n:,} rows by binary COPY into simhash_documents in {took:.1f} s = "
             f"{n / took:,.0f} rows/s")
        t = time.perf_counter()
        # the whole database: the tables the root's triggers keep get their stats too
        conn.execute("VACUUM (ANALYZE)")
        forget_empty_stats(conn)  # tomorrow's and the default: as the store leaves them
        conn.execute("CHECKPOINT")
        warmed = _prewarm(conn)
        echo(f"VACUUM (ANALYZE) of the database, CHECKPOINT, warm-up ({warmed}) in "
             f"{time.perf_counter() - t:.1f} s")
        _sizes(conn, n)

    fams, stored = bench_text.texts_to_store(seed, texts)
    t = time.perf_counter()
    with SimhashStore(dsn, verify="all") as store:
        store.add_many(stored, dedup=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        got = conn.execute(
            "SELECT count(*), avg(cardinality(sentence_hashes)), max(cardinality(sentence_hashes)),"
            " avg(length(verify_text)) FROM simhash_documents WHERE id > %s", [n]).fetchone()
        assert got is not None
        conn.execute("CHECKPOINT")
    echo(f"real rows: {got[0]:,} texts by add_many in {time.perf_counter() - t:.1f} s; as "
         f"stored: {float(got[1] or 0):.2f} keys (at most {got[2] or 0}), "
         f"{float(got[3] or 0):.0f} characters of verification text (synthetic rows: "
         f"{p.counts.mean():.2f} keys, {p.chars:.0f} characters)")

    qs = bench_text.make_queries(seed, fams, queries)
    lat, found = bench_text.near_side_by_side(dsn, qs)
    plan_shapes(dsn, qs)
    figures = bench_text.adds(dsn, clients, seconds, seed, rounds)
    bench_text.print_table(lat, found, len(qs), figures)
    echo(f"all/short: near p50 {pct(lat['all'], 50) / pct(lat['short'], 50):.2f}x, "
         f"adds/s {figures['all']['adds_s'] / figures['short']['adds_s']:.2f}x")


def _sizes(conn: psycopg.Connection[Any], n: int) -> None:
    """Rows per partition; each table's and index's size, summed over its partitions."""
    mb, echo = 1 << 20, click.echo
    rows = conn.execute(
        "SELECT tableoid::regclass::text, count(*) FROM simhash_documents GROUP BY 1 ORDER BY 1"
    ).fetchall()
    echo(f"rows: {', '.join(f'{name} {count:,}' for name, count in rows)}")
    sizes = conn.execute(_SIZES).fetchall()
    total = sum(size for *_, size in sizes)
    echo(f"size: {total / mb:,.0f} MB in all = {total / n:,.0f} B/row (tables with TOAST, "
         "and indexes, summed over partitions; those under 0.5% left out):")
    for _table, name, is_index, size in sizes:
        if size >= total / 200:
            label = f"  {name}" if is_index else f"{name} (table)"
            echo(f"  {label:<48} {size / mb:>9,.1f} MB {size / n:>7,.0f} B/row")


def plan_shapes(dsn: str, queries: list[str]) -> None:
    """A "plan shape" line per mode: the scans one text near() ran, nested statements
    included (lab/bench/plans.py), and which partitions holding rows it read whole."""
    try:
        from lab.bench.plans import capture_plans, scan_nodes, seq_scans_of_filled_partitions
    except ImportError:  # the module came later than this benchmark
        click.echo("plan shape: lab/bench/plans.py missing")
        return
    from simhash_pg.store import SimhashStore

    for m in bench_text.MODES:
        with SimhashStore(dsn, verify=m) as store:  # type: ignore[arg-type]
            try:
                # past the first executions, after which cached plans may turn generic
                for q in queries[1:7]:
                    store.near(q)
                with capture_plans(store.connection) as plans:
                    store.near(queries[0])
                seqs = seq_scans_of_filled_partitions(store.connection, plans)
            except psycopg.Error as exc:  # LOAD 'auto_explain' needs a superuser
                click.echo(f"plan shape {m}: not captured ({str(exc).strip()})")
                return
        scans = Counter(f"{node['Node Type']} on {node['Relation Name']}"
                        for plan in plans for node in scan_nodes(plan))
        click.echo(f"plan shape {m}: {len(plans)} plans; seq scans of partitions holding rows: "
                   f"{', '.join(seqs) or 'none'}; scans: "
                   + ", ".join(f"{k} x{v}" for k, v in sorted(scans.items())))
