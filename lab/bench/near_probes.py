"""simhash_near_probes (revision 0009) against the radius searches, side by side in one run.

A throwaway server (lab.bench._scratch), N fingerprints bulk-loaded as
``simhash-pg bench store`` loads them (10% planted near-duplicates), then per
query, interleaved so that every form sees the same caches:

- ``simhash_near_probes``: T probe values per block (the query's own block and
  T - 1 random flips of 1-3 of its bits, as margin-ranked probes are flips of
  the block) and a Hamming cap;
- ``simhash_near(fp, 3)`` and ``simhash_near(fp, 11)``, the radius searches;
- ``simhash_near_probes_many`` over batches of the same queries (per query).

Client-side wall time of one prepared call, fetch included; warm-up first.

    uv run python -m lab.bench.near_probes --rows 1000000 --queries 2000
"""

from __future__ import annotations

import multiprocessing
import random
import time
from typing import Any

import click

from lab.bench._scratch import scratch_dsn
from lab.bench.store import make_data, queries_for
from lab.bench.timing import pct
from lab.connect import connect as store_connect

SINGLE = ("SELECT * FROM simhash_near_probes(%s, %s::smallint[], %s::smallint[],"
          " %s::smallint[], %s::smallint[], %s)")
MANY = "SELECT * FROM simhash_near_probes_many(%s::bigint[], %s::smallint[], %s::integer[])"
NEAR = "SELECT * FROM simhash_near(%s, %s)"


def probe_values(fp: int, t: int, rnd: random.Random) -> list[list[int]]:
    """Per block: the query's own value, then t - 1 distinct flips of 1-3 of its bits."""
    from simhash_pg.bits import blocks

    out = []
    for b in blocks(fp):
        raw = b + 32768
        values = {raw}
        while len(values) < t:
            mask = 0
            for bit in rnd.sample(range(16), rnd.randint(1, 3)):
                mask |= 1 << bit
            values.add(raw ^ mask)
        out.append([raw - 32768, *sorted(v - 32768 for v in values - {raw})])
    return out


def _ms(conn: Any, sql: str, args: list[Any]) -> tuple[float, int]:
    t = time.perf_counter()
    rows = conn.execute(sql, args, prepare=True).fetchall()
    return (time.perf_counter() - t) * 1000, len(rows)


@click.command()
@click.option("--rows", "n", default=1_000_000, show_default=True)
@click.option("--queries", "nq", default=2000, show_default=True)
@click.option("--probes", "t", default=11, show_default=True, help="values per block")
@click.option("--cap", default=13, show_default=True)
@click.option("--batch", default=100, show_default=True, help="queries per many-form call")
@click.option("--seed", default=1, show_default=True)
@click.option("--dsn", default=None, help="a database the benchmark may empty (default: throwaway)")
def main(n: int, nq: int, t: int, cap: int, batch: int, seed: int, dsn: str | None) -> None:
    with scratch_dsn(dsn) as url:
        _run(url, n, nq, t, cap, batch, seed)


def _run(dsn: str, n: int, nq: int, t: int, cap: int, batch: int, seed: int) -> None:

    from simhash_pg.bits import to_signed
    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    fps = make_data(n, seed, skew=False)
    with SimhashStore(dsn) as store:
        began = time.perf_counter()
        store.bulk_load(fps)
        load_s = time.perf_counter() - began
    conn = store_connect(dsn)
    version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    echo(f"near_probes bench: n={n:,} queries={nq} T={t} cap={cap} seed={seed}; "
         f"PostgreSQL {version}, {multiprocessing.cpu_count()} cores; bulk load {load_s:.1f} s")

    rnd = random.Random(seed)
    qs = queries_for(fps, nq, 8, seed)  # half 0..8 bits from a stored row, half random
    probes = [probe_values(q, t, rnd) for q in qs]
    forms: dict[str, tuple[str, Any]] = {
        f"simhash_near_probes T={t} cap={cap}":
            (SINGLE, lambda i: [to_signed(qs[i]), *probes[i], cap]),
        "simhash_near(fp, 3)": (NEAR, lambda i: [to_signed(qs[i]), 3]),
        "simhash_near(fp, 11)": (NEAR, lambda i: [to_signed(qs[i]), 11]),
    }
    names = list(forms)
    for i in range(min(200, nq)):  # warm-up: caches, prepared statements, plans
        for name in names:
            _ms(conn, forms[name][0], forms[name][1](i))
    times: dict[str, list[float]] = {name: [] for name in names}
    found: dict[str, int] = dict.fromkeys(names, 0)
    for i in range(nq):
        for j in range(len(names)):  # each form first in turn
            name = names[(i + j) % len(names)]
            ms, rows = _ms(conn, forms[name][0], forms[name][1](i))
            times[name].append(ms)
            found[name] += rows
    many: list[float] = []
    for lo in range(0, nq, batch):
        hi = min(nq, lo + batch)
        width = max(len(p) for q in probes[lo:hi] for p in q)
        arg = [[p + [None] * (width - len(p)) for p in q] for q in probes[lo:hi]]
        ms, _ = _ms(conn, MANY, [[to_signed(q) for q in qs[lo:hi]], arg, [cap] * (hi - lo)])
        many.append(ms / (hi - lo))
    echo(f"{'form':<40} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'rows/query':>11}")
    for name in names:
        ts = times[name]
        echo(f"{name:<40} {pct(ts, 50):8.3f} {pct(ts, 90):8.3f} {pct(ts, 99):8.3f} "
             f"{found[name] / nq:11.2f}")
    echo(f"{f'simhash_near_probes_many, {batch}/call':<40} {pct(many, 50):8.3f} "
         f"{pct(many, 90):8.3f} {pct(many, 99):8.3f}   (per query)")
    conn.close()


if __name__ == "__main__":
    main()
