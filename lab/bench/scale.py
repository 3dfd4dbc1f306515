"""``simhash-pg bench scale``: text near() and verified adds in a store of text-shaped rows.

The other benchmarks fill the store with bare random fingerprints, which no
user's store holds, so they missed what a store of text rows costs: each row
keeps a verification text, a sentence signature and ~7 keys (a title ~20)
in ``sentence_hashes``, some of them boilerplate held by thousands of rows.
Here the store is filled as a user's would be (lab/bench/rows.py):

- ``--n`` (or ``--at``) rows of ``--kind`` news or titles, shaped as the
  product stores such texts, over two daily partitions (yesterday's and
  today's, half each: a two-day retention window), by binary COPY into the root table
  ``simhash_documents``, so that its row triggers fire as on any insert;
- VACUUM (ANALYZE), CHECKPOINT, prewarm; the table's and indexes' sizes;
- ``--texts`` real texts on top, stored by the product (``add_many``):
  ``--corpus`` ones, else synthetic news texts (as ``bench text``).

Then, side by side in one run under ``off``, ``short`` and ``all``, as
``bench text`` measures them (the same code): text near() p50/p99 over
edited copies of stored texts, the modes interleaved query by query, and
verified adds/s with ``--clients`` processes, the modes taking turns; and
the bulk add rate: ``add_many(dedup=False)`` of ``--bulk`` new synthetic
texts of the kind, fingerprinted by the product, under the default mode.

``--at N1,N2,...`` grows one store through these sizes in one run, so that
they stand side by side: filled to N1 rows and measured, filled on to N2
(the same generator and two days, ids continuing; each segment's rows take
its share of each day, so that a partition's times still grow with its ids)
and measured again, and so on. At each point: VACUUM (ANALYZE) of the
database (which, as autovacuum, finds the new pages: the rest is all
visible), CHECKPOINT, prewarm, then the figures above, the adds and bulk
texts of each point new ones; the real texts are stored once, at the first
point. A growth table ends the run: the default's near p50, add p50 and
bulk docs/s, and the fill's COPY rows/s per segment, per point, and the
last point's ratios to the first (issue 28's targets: from 300k to 3M rows,
near and add p50 grow by at most 1.5x, bulk adds keep >= 0.5x).

Runs on a throwaway server (deleted afterwards unless --keep), or on --dsn,
whose database it EMPTIES (downgrade to base, upgrade).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import click
import psycopg

from lab.bench import text as bench_text
from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.rows import (
    FAMILY_SHARE,
    KINDS,
    SHARED_KEYS,
    Days,
    Profile,
    Segment,
    copy_rows,
    last_id,
    profile,
    shared_keys,
    synthetic_texts,
    two_days,
)
from lab.bench.timing import pct, server_line
from lab.connect import connect as store_connect

__all__ = ["command", "partition_rows", "plan_shapes"]

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


@dataclass(frozen=True)
class Point:
    """The figures at one size of a growing store (the default mode's: ``all``)."""

    synthetic: int  # synthetic rows stored
    rows: int  # rows in the store when measured
    fill_rate: float  # the COPY rows/s of the segment that led here
    near_p50: float
    add_p50: float
    bulk_rate: float  # add_many docs/s


def label(n: int) -> str:
    """300000 -> 300k, 3000000 -> 3M, 2500 -> 2.5k."""
    for unit, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= unit:
            return f"{n / unit:g}{suffix}"
    return str(n)


def _sizes_list(ctx: click.Context, param: click.Parameter,
                value: str | None) -> tuple[int, ...] | None:
    """--at: sizes (300000 or 300k, 3M), at least 100 and growing."""
    if value is None:
        return None
    try:
        points = tuple(round(float(v[:-1]) * {"k": 1e3, "m": 1e6}[v[-1].lower()])
                       if v[-1].lower() in "km" else int(v)
                       for v in (x.strip().replace("_", "") for x in value.split(",")))
    except (ValueError, IndexError, KeyError):
        raise click.BadParameter(f"{value!r}: sizes separated by commas, e.g. 300000,3M") from None
    if points[0] < 100 or any(b <= a for a, b in pairwise(points)):
        raise click.BadParameter(f"{value!r}: sizes of at least 100, each larger than the last")
    return points


@click.command("scale")
@click.option("--n", "n", type=click.IntRange(100), default=1_000_000, show_default=True,
              help="Synthetic text rows stored (COPY), half yesterday's, half today's.")
@click.option("--at", "at", callback=_sizes_list, metavar="N1,N2,...",
              help="Grow the store through these sizes (synthetic rows; 300000 or 300k) and "
              "measure at each, in one run (instead of --n).")
@click.option("--kind", type=click.Choice(KINDS), default="news", show_default=True,
              help="What the synthetic rows (and the bulk adds' texts) are shaped as.")
@click.option("--text-chars", type=click.IntRange(20), default=400, show_default=True,
              help="News rows' verification text length (mean; letters).")
@click.option("--boilerplate", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help=f"Share of rows that hold one of {SHARED_KEYS} shared keys (Zipf popularity).")
@click.option("--texts", type=click.IntRange(10), default=3000, show_default=True,
              help="Real texts stored through the product on top (once, at the first size).")
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), multiple=True,
              help="Real texts instead of synthetic news: a JSONL file with a 'text' per "
              "line (e.g. ../shared/eval/corpus_en.jsonl; repeatable). --texts of them are "
              "stored, the rest are the adds' new texts.")
@bench_text.measure_options
@click.option("--bulk", type=click.IntRange(1), default=20_000, show_default=True,
              help="New synthetic texts of the kind bulk-added (add_many, dedup off), timed.")
@click.option("--keys-in-bulk", is_flag=True,
              help="Fill the key table after each segment's COPY by one INSERT and an index "
              "build (as the upgrade to 0017 does) instead of row by row by its trigger: the "
              "same store, several times faster; the fill rate then measures no write path.")
@click.option("--again", is_flag=True,
              help="Measure the store an earlier run left (--dsn) again, after upgrading its "
              "schema to this version's (timed): no fill. Give the earlier run's --corpus, "
              "--texts and --seed: its queries are asked again. Two revisions side by side "
              "on one big store.")
@click.option("--probes-pairs", type=click.IntRange(min=0), default=None,
              help="With --again: record this many pair probes per block for long texts "
              "in the store's 'probes' (0: none, single blocks as before revision 0019), as "
              "its owner would (docs/operations.md), before measuring.")
@click.option("--seed", type=int, default=1, show_default=True)
@scratch_options
@click.pass_context
def command(ctx: click.Context, n: int, at: tuple[int, ...] | None, kind: str,
            text_chars: int, boilerplate: float, texts: int, corpus: tuple[str, ...],
            queries: int, clients: int, seconds: float, rounds: int, bulk: int,
            keys_in_bulk: bool, again: bool, probes_pairs: int | None, seed: int,
            dsn: str | None, home: str | None, keep: bool) -> None:
    """Text near() p50/p99, verified adds/s under off, short and all, and bulk adds/s, in a
    store of text-shaped rows (at several sizes with --at)."""
    if at and ctx.get_parameter_source("n") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--n and --at: give one (--at's last size is the store's)")
    if again and dsn is None:
        raise click.UsageError("--again measures an earlier run's store: give its --dsn")
    if probes_pairs is not None and not again:
        raise click.UsageError("--probes-pairs changes an earlier run's store: give --again")
    if corpus:  # module state of bench text, set before its add clients are forked
        real = bench_text.read_corpus(corpus, seed)
        bench_text._STORED[:], bench_text._HELD[:] = real[:texts], real[texts:]
    try:
        with scratch_dsn(dsn, home=home, keep=keep) as url:
            if again:
                _again(url, kind, texts, queries, clients, seconds, rounds, bulk, text_chars,
                       seed, probes_pairs)
                return
            _run(url, at or (n,), kind, text_chars, boilerplate, texts, queries, clients,
                 seconds, rounds, bulk, seed, keys_in_bulk)
    finally:
        bench_text._STORED.clear()
        bench_text._HELD.clear()


def _run(dsn: str, points: tuple[int, ...], kind: str, text_chars: int, boilerplate: float,
         texts: int, queries: int, clients: int, seconds: float, rounds: int, bulk: int,
         seed: int, keys_in_bulk: bool = False) -> None:
    from simhash_pg.db import migrate

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    real = bench_text._STORED
    source = (f"{len(real):,} corpus texts ({len(bench_text._HELD):,} held back for the adds)"
              if real else f"{texts:,} synthetic news texts")
    sizes = (f"n={points[0]:,}" if len(points) == 1
             else "at " + ", ".join(f"{x:,}" for x in points))
    echo(f"simhash-pg bench scale: {sizes} {kind} rows + {source}, {queries} queries per "
         f"mode, {clients} clients x {seconds:g} s per mode in {rounds} turns, {bulk:,} bulk "
         f"adds, seed={seed}")
    p = profile(kind, text_chars, seed)
    top = shared_keys(seed)[1]
    echo(f"{kind} rows as the product stores {len(p.texts):,} synthetic ones: "
         f"{p.chars:.0f} characters of verification text, {p.counts.mean():.2f} keys "
         f"(at most {p.width}), a signature in {100 * p.signed.mean():.0f}%; "
         f"{100 * boilerplate:g}% hold one of {SHARED_KEYS} shared keys (the most held: "
         f"{100 * boilerplate * top[0]:.1f}% of rows, the least {100 * boilerplate * top[-1]:.2f}%)"
         f"; {100 * FAMILY_SHARE:g}% are near copies (1-3 bits) of another")
    with store_connect(dsn) as conn:
        echo(server_line(conn))
        days = two_days(conn)

    fams, stored = bench_text.texts_to_store(seed, texts)
    qs = bench_text.make_queries(seed, fams, queries)
    got: list[Point] = []
    for i, (lo, hi) in enumerate(pairwise((0, *points))):
        if len(points) > 1:
            echo(f"== at {label(hi)} synthetic rows ({hi:,}) ==")
        rate, rows = _fill(dsn, p, lo, hi, points[-1], days, boilerplate, seed, keys_in_bulk)
        if i == 0:
            rows += _store_real(dsn, stored, p)
        # each point's adds and bulk texts new ones (the first point's as a plain run's)
        s = seed + 10_007 * i
        near_p50, add_p50 = _measure(dsn, qs, clients, seconds, rounds, s)
        got.append(Point(hi, rows, rate, near_p50, add_p50,
                         _bulk(dsn, kind, bulk, text_chars, s + 5_003)))
    if len(got) > 1:
        _growth(got, kind, bulk)


def _again(dsn: str, kind: str, texts: int, queries: int, clients: int, seconds: float,
           rounds: int, bulk: int, text_chars: int, seed: int,
           probes_pairs: int | None = None) -> None:
    """The measurements of :func:`_run` on the store it left, upgraded first (timed),
    with its probes record's pair probes set to ``probes_pairs`` (None: as recorded)."""
    from simhash_pg.db import migrate

    echo = click.echo
    was = migrate.current(dsn)
    clock = time.perf_counter()
    migrate.upgrade(dsn)
    echo(f"simhash-pg bench scale --again: schema {was} -> {migrate.HEAD} in "
         f"{time.perf_counter() - clock:.1f} s; {queries} queries per mode, {clients} clients "
         f"x {seconds:g} s per mode in {rounds} turns, {bulk:,} bulk adds, seed={seed}")
    with store_connect(dsn) as conn:
        echo(server_line(conn))
        if probes_pairs is not None:
            conn.execute(_SET_PAIRS if probes_pairs else _NO_PAIRS, [probes_pairs])
        probes = conn.execute("SELECT value FROM simhash_meta WHERE name = 'probes'").fetchone()
        echo(f"probes: {probes[0] if probes else 'not recorded (the defaults)'}")
        _settle(conn)  # as after a fill: an upgrade may have evicted the store
        _sizes(conn)
    fams, _ = bench_text.texts_to_store(seed, texts)
    qs = bench_text.make_queries(seed, fams, queries)
    _measure(dsn, qs, clients, seconds, rounds, seed + 20_011)
    _bulk(dsn, kind, bulk, text_chars, seed + 20_011 + 5_003)


# the owner's move of a store's probes (docs/operations.md, "What a store records")
_SET_PAIRS = ("UPDATE simhash_meta SET value = value || jsonb_build_object('pairs', %s::integer)"
              " WHERE name = 'probes'")
_NO_PAIRS = "UPDATE simhash_meta SET value = value - 'pairs' WHERE name = 'probes' AND %s = 0"


def _measure(dsn: str, qs: list[str], clients: int, seconds: float, rounds: int,
             seed: int) -> tuple[float, float]:
    """near() side by side, the plans' shapes, the adds; the table. (all near p50, add p50)."""
    lat, found = bench_text.near_side_by_side(dsn, qs)
    plan_shapes(dsn, qs)
    figures = bench_text.adds(dsn, clients, seconds, seed, rounds)
    bench_text.print_table(lat, found, len(qs), figures)
    single = lat.get(bench_text.SINGLE_BLOCKS)
    if single:
        click.echo(f"all with long texts by single blocks (before revision 0019), side by side: "
                   f"near p50 {pct(single, 50):.2f} ms, p99 {pct(single, 99):.2f} "
                   f"({pct(single, 50) / pct(lat['short'], 50):.2f}x short's), found "
                   f"{100 * found[bench_text.SINGLE_BLOCKS] / len(qs):.0f}%; pairs/single "
                   f"p50 {pct(lat['all'], 50) / pct(single, 50):.2f}x")
    click.echo(f"all/short: near p50 {pct(lat['all'], 50) / pct(lat['short'], 50):.2f}x, "
               f"adds/s {figures['all']['adds_s'] / figures['short']['adds_s']:.2f}x")
    return pct(lat["all"], 50), figures["all"]["p50"]


def _fill(dsn: str, p: Profile, lo: int, hi: int, total: int, days: Days, boilerplate: float,
          seed: int, keys_in_bulk: bool = False) -> tuple[float, int]:
    """Synthetic rows ``lo``..``hi`` - 1 in, then VACUUM (ANALYZE), CHECKPOINT, prewarm and
    the sizes; the COPY's rows/s and the rows the store holds."""
    echo = click.echo
    with store_connect(dsn) as conn:
        seg = Segment(lo, hi, total, last_id(conn))

        def progress(rows: int, took: float) -> None:
            if rows < hi - lo:
                echo(f"  {rows:,} rows in {took:.0f} s ({rows / took:,.0f} rows/s)")

        t = time.perf_counter()
        copy_rows(conn, p, seg, days, boilerplate, seed, progress, keys_in_bulk)
        took = time.perf_counter() - t
        how = "then their keys in bulk" if keys_in_bulk else "their keys by its trigger"
        echo(f"fill: {hi - lo:,} rows (ids {seg.after + 1:,}..{seg.after + hi - lo:,}) by "
             f"binary COPY into simhash_documents, {how}, in {took:.1f} s = "
             f"{(hi - lo) / took:,.0f} rows/s")
        _settle(conn)
        return (hi - lo) / took, _sizes(conn)


def _settle(conn: psycopg.Connection[Any]) -> None:
    """VACUUM (ANALYZE), CHECKPOINT and prewarm: the store as a measurement starts from."""
    from lab.bench.stream import _prewarm
    from simhash_pg.store.planner_stats import forget_empty_stats

    t = time.perf_counter()
    # the whole database: the tables the root's triggers keep get their stats too
    conn.execute("VACUUM (ANALYZE)")
    forget_empty_stats(conn)  # tomorrow's and the default: as the store leaves them
    conn.execute("CHECKPOINT")
    warmed = _prewarm(conn)
    click.echo(f"VACUUM (ANALYZE) of the database, CHECKPOINT, warm-up ({warmed}) in "
               f"{time.perf_counter() - t:.1f} s")


def _store_real(dsn: str, stored: list[str], p: Profile) -> int:
    """The real texts, by the product, after the synthetic rows (ids and times); how many."""
    from simhash_pg.store import SimhashStore

    t = time.perf_counter()
    with SimhashStore(dsn, verify="all") as store:
        first = last_id(store.connection)
        store.add_many(stored, dedup=False)
    with store_connect(dsn) as conn:
        got = conn.execute(
            "SELECT count(*), avg(cardinality(sentence_hashes)), max(cardinality(sentence_hashes)),"
            " avg(length(verify_text)) FROM simhash_documents WHERE id > %s", [first]).fetchone()
        assert got is not None
        conn.execute("CHECKPOINT")
    click.echo(f"real rows: {got[0]:,} texts by add_many in {time.perf_counter() - t:.1f} s; "
               f"as stored: {float(got[1] or 0):.2f} keys (at most {got[2] or 0}), "
               f"{float(got[3] or 0):.0f} characters of verification text (synthetic rows: "
               f"{p.counts.mean():.2f} keys, {p.chars:.0f} characters)")
    return int(got[0])


def _bulk(dsn: str, kind: str, count: int, text_chars: int, seed: int) -> float:
    """add_many(dedup=False) of ``count`` new synthetic texts under the default mode: docs/s."""
    from simhash_pg.store import SimhashStore

    fresh = synthetic_texts(kind, count, text_chars, seed)
    with SimhashStore(dsn) as store:
        t = time.perf_counter()
        r = store.add_many(fresh, dedup=False)
        took = time.perf_counter() - t
    click.echo(f"bulk adds: add_many(dedup=False) of {count:,} new {kind} texts under "
               f"'{store.verify}' in {took:.1f} s = {count / took:,.0f} docs/s "
               f"({r.inserted:,} stored, {r.errors:,} errors)")
    return count / took


def _growth(points: list[Point], kind: str, bulk: int) -> None:
    """Per point, the default's figures; the last point's ratios to the first."""
    echo = click.echo
    head = (f"{'at':>6} {'rows':>11} {'near p50':>9} {'add p50':>8} {'bulk docs/s':>12} "
            f"{'fill rows/s':>12}")
    echo(f"growth, verify 'all' (near, add: ms p50; bulk: add_many of {bulk:,} new {kind} "
         "texts; fill: the COPY of the rows up to the point):")
    echo(head)
    echo("-" * len(head))
    for x in points:
        echo(f"{label(x.synthetic):>6} {x.rows:>11,} {x.near_p50:>9.2f} {x.add_p50:>8.2f} "
             f"{x.bulk_rate:>12,.0f} {x.fill_rate:>12,.0f}")
    a, b = points[0], points[-1]
    echo(f"growth {label(a.synthetic)} -> {label(b.synthetic)}: near p50 "
         f"{b.near_p50 / a.near_p50:.2f}x, add p50 {b.add_p50 / a.add_p50:.2f}x, bulk adds "
         f"{b.bulk_rate / a.bulk_rate:.2f}x, fill {b.fill_rate / a.fill_rate:.2f}x (targets, "
         "issue 28, 300k -> 3M: near and add p50 <= 1.5x, bulk adds >= 0.5x)")


def partition_rows(conn: psycopg.Connection[Any]) -> list[tuple[str, int]]:
    """(partition, rows) of each partition holding rows, by name (a count of every row)."""
    return [(str(name), int(n)) for name, n in conn.execute(
        "SELECT tableoid::regclass::text, count(*) FROM simhash_documents GROUP BY 1 ORDER BY 1")]


def _sizes(conn: psycopg.Connection[Any]) -> int:
    """Rows per partition; each table's and index's size, summed over its partitions; the
    rows in all."""
    mb, echo = 1 << 20, click.echo
    rows = partition_rows(conn)
    n = sum(count for _, count in rows)
    echo(f"rows: {', '.join(f'{name} {count:,}' for name, count in rows)}")
    sizes = conn.execute(_SIZES).fetchall()
    total = sum(size for *_, size in sizes)
    echo(f"size: {total / mb:,.0f} MB in all = {total / n:,.0f} B/row (tables with TOAST, "
         "and indexes, summed over partitions; those under 0.5% left out):")
    for _table, name, is_index, size in sizes:
        if size >= total / 200:
            what = f"  {name}" if is_index else f"{name} (table)"
            echo(f"  {what:<48} {size / mb:>9,.1f} MB {size / n:>7,.0f} B/row")
    return n


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
