"""A block index ordered by heap region, against today's, side by side on one partition's rows.

    uv run python -m lab.experiments.heap_region --dsn DSN --partition P --shift 18

On a store ``bench scale --keep`` left: two copies of partition ``P`` (the
same rows in the same heap order, plus ``region = id >> shift``), one with
today's block-0 index ``(b0, b1, fingerprint)`` and one with ``(b0, region,
b1, fingerprint)``. Block 0's probes of sampled stored fingerprints (8 or 32
values, the own value and flips of 1-3 bits; pairs: 32 leading values and 81
second ones) run on both copies query by query, alternating. Printed per
form: the server's execution time (p50, EXPLAIN ANALYZE) and the shared
buffers touched. An index-only scan checks each entry's heap block in the
visibility map, and entries in arrival order switch map pages nearly every
time (docs/scaling.md, "Text queries at scale"); the region key groups each
block value's entries by heap region. The copies are dropped at the end.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

import click
import psycopg
from psycopg import sql

FORMS = ("single 8", "single 32", "pairs 32 x 81")
COPIES = ("exp_heap_plain", "exp_heap_region")
KEYS = ("b0, b1, fingerprint", "b0, region, b1, fingerprint")


def _flips(rng: random.Random, v: int, n: int) -> list[int]:
    """``v`` and ``n - 1`` other smallint block values 1-3 bits away."""
    vals = [v]
    while len(vals) < n:
        m = 0
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            m |= 1 << rng.randrange(16)
        w = ((v + 32768) ^ m) - 32768
        if w not in vals:
            vals.append(w)
    return vals


def _probe(c: psycopg.Connection[Any], table: str, form: str, fp: int,
           lead: list[int], second: list[int]) -> tuple[float, int]:
    """One probe of block 0 under EXPLAIN ANALYZE: (ms in the server, buffers)."""
    where = "b0 = ANY(%s::smallint[])"
    args: tuple[Any, ...] = (lead,)
    if form.startswith("pairs"):
        where += " AND b1 = ANY(%s::smallint[])"
        args += (second,)
    row = c.execute(
        f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT fingerprint FROM {table}"
        f" WHERE {where} AND simhash_hamming(fingerprint, %s::bigint) <= 7",
        (*args, fp)).fetchone()
    assert row is not None
    plan = row[0][0]
    node = plan["Plan"]
    if node["Node Type"] != "Index Only Scan":
        raise click.ClickException(f"{table}: expected an index-only scan, got {node['Node Type']}")
    return plan["Execution Time"], node["Shared Hit Blocks"] + node["Shared Read Blocks"]


@click.command()
@click.option("--dsn", required=True)
@click.option("--partition", required=True, help="a partition holding rows")
@click.option("--shift", default=18, show_default=True, help="region = id >> shift")
@click.option("--queries", default=200, show_default=True)
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(min=2),
              help="the first reads the pages in and is not counted")
@click.option("--seed", default=7, show_default=True)
def main(dsn: str, partition: str, shift: int, queries: int, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SET search_path = simhash, public")
        c.execute("SET max_parallel_workers_per_gather = 0")
        try:
            for table, key in zip(COPIES, KEYS, strict=True):
                c.execute(f"DROP TABLE IF EXISTS {table}")
                c.execute(f"CREATE TABLE {table} AS SELECT *, (id >> {int(shift)})::int AS region"
                          f" FROM {sql.Identifier(*partition.split('.')).as_string(c)}")
                c.execute(f"CREATE INDEX ON {table} ({key})")
                c.execute(f"VACUUM (ANALYZE) {table}")
            sample = c.execute(f"SELECT fingerprint, b0, b1 FROM {COPIES[0]}"
                               " TABLESAMPLE SYSTEM (0.1) LIMIT %s", (queries,)).fetchall()
            qs = [(fp, _flips(rng, b0, 8), _flips(rng, b0, 32), _flips(rng, b1, 81))
                  for fp, b0, b1 in sample]
            size, regions = c.execute(
                f"SELECT pg_relation_size('{COPIES[0]}'), count(DISTINCT region) FROM {COPIES[0]}"
            ).fetchone() or (0, 0)
            click.echo(f"{partition}: {len(qs)} sampled fingerprints; heap {size / 2**20:,.0f} MB"
                       f" = {size / 8192 / 32672:.1f} visibility-map pages; {regions} regions"
                       f" (id >> {shift}); {rounds} rounds, the copies alternating query by query")
            times: dict[tuple[str, str], list[float]] = {}
            bufs: dict[tuple[str, str], list[int]] = {}
            for r in range(rounds):
                for fp, p8, p32, s81 in qs:
                    for form, lead in zip(FORMS, (p8, p32, p32), strict=True):
                        for table in (COPIES if r % 2 == 0 else COPIES[::-1]):
                            ms, b = _probe(c, table, form, fp, lead, s81)
                            if r:  # the first round reads the pages in
                                times.setdefault((form, table), []).append(ms)
                                bufs.setdefault((form, table), []).append(b)
            click.echo(f"{'form':<14} {'plain p50':>10} {'region p50':>11} {'ratio':>6}"
                       f" {'plain bufs':>11} {'region bufs':>12}")
            for form in FORMS:
                p, g = (statistics.median(times[(form, t)]) for t in COPIES)
                bp, bg = (statistics.mean(bufs[(form, t)]) for t in COPIES)
                click.echo(f"{form:<14} {p:>10.3f} {g:>11.3f} {g / p:>5.2f}x"
                           f" {bp:>11,.0f} {bg:>12,.0f}")
        finally:
            for table in COPIES:
                c.execute(f"DROP TABLE IF EXISTS {table}")


if __name__ == "__main__":
    main()
