"""Revision 0006 against 0005: simhash_near's probe forms side by side (issue 6).

Figures in docs/scaling.md. Not part of the package; run from the repository:

    uv run python -m lab.experiments.probe_forms --dsn DSN [--k 3,6,10] [--queries Q]
    uv run python -m lab.experiments.probe_forms --n N [--skew] [--home DIR]
    uv run python -m lab.experiments.probe_forms --dsn DSN --forms   # 0006's two forms

--forms times 0006's single-block and pair forms against each other instead
(simhash.pair_probe_min_rows set per call): the crossover the size threshold
of simhash_use_pairs stands for.

With --dsn, the database must hold a store at revision 0006 (e.g. one loaded
by `simhash-pg bench store --keep`, or `--n` here). The 0005 functions are
installed beside the current ones under other names (x0005_near and the
recursive-CTE probes they call), and both are timed on the same queries:
half a stored fingerprint with up to k bits flipped, half random; each query
is run by both, in alternating order, so neither always meets a warm cache.
End to end from Python, prepared, one connection.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from typing import Any

import numpy as np
import psycopg

from lab.bench.store import make_data, queries_for
from lab.bench.timing import pct
from lab.connect import connect as store_connect
from simhash_pg.bits import to_signed
from simhash_pg.db.resources import read_sql


def install_0005(conn: psycopg.Connection) -> None:
    """0005's simhash_near and its 0001 probe helpers, renamed x0005_*."""
    helpers = read_sql("0001_functions.sql")
    for name in ("simhash_masks", "simhash_probes"):
        body = re.search(rf"CREATE OR REPLACE FUNCTION {name}\(.*?\n\$\$;\n", helpers, re.S)
        assert body is not None, name
        conn.execute(body.group(0).replace("simhash_masks", "x0005_masks")
                     .replace("simhash_probes", "x0005_probes"))
    near = re.search(r"CREATE OR REPLACE FUNCTION simhash_near\(.*?\n\$\$;\n",
                     read_sql("0004_functions.sql"), re.S)
    assert near is not None
    conn.execute(near.group(0).replace("FUNCTION simhash_near(", "FUNCTION x0005_near(")
                 .replace("simhash_probes(", "x0005_probes("))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--skew", action="store_true")
    ap.add_argument("--home")
    ap.add_argument("--k", default="3,6,10")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--forms", action="store_true")
    args = ap.parse_args()
    if args.dsn:
        run(args.dsn, None, args)
        return
    from lab.bench._scratch import scratch_dsn
    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore

    with scratch_dsn(None, home=args.home, keep=bool(args.home)) as dsn:
        migrate.upgrade(dsn)
        fps = make_data(args.n, 1, args.skew)
        with SimhashStore(dsn) as store:
            store.bulk_load(fps)
        run(dsn, fps, args)


def run(dsn: str, fps: np.ndarray | None, args: argparse.Namespace) -> None:
    conn = store_connect(dsn)
    install_0005(conn)
    if fps is None:
        rows = conn.execute(
            "SELECT fingerprint FROM simhash_documents TABLESAMPLE SYSTEM (1) LIMIT 100000"
        ).fetchall()
        fps = np.array([r[0] for r in rows], dtype=np.int64).astype(np.uint64)
    n = conn.execute("SELECT count(*) FROM simhash_documents").fetchone()[0]  # type: ignore[index]
    print(f"{n:,} rows, {os.getloadavg()[0]:.1f} load average, {args.queries} queries per k")
    # name -> (function, simhash.pair_probe_min_rows or None for the default)
    runs = ({"single": ("simhash_near", "1e30"), "pair": ("simhash_near", "0")} if args.forms
            else {"0005": ("x0005_near", None), "0006": ("simhash_near", None)})
    a, b = runs
    print(f"| k | {a} p50 / p99 ms | {b} p50 / p99 ms | p50 ratio |")
    print("|---|---|---|---|")
    for k in (int(x) for x in args.k.split(",")):
        qs = [to_signed(q) for q in queries_for(fps, args.queries, k, 7 + k)]
        times: dict[str, list[float]] = {name: [] for name in runs}

        def call(name: str, q: int, k: int = k) -> tuple[float, list[Any]]:
            fn, threshold = runs[name]
            if threshold is not None:
                conn.execute(f"SET simhash.pair_probe_min_rows = '{threshold}'")
            t = time.perf_counter()
            rows = conn.execute(f"SELECT * FROM {fn}(%s, %s)", [q, k], prepare=True).fetchall()
            return (time.perf_counter() - t) * 1000, rows

        for q in qs[:20]:
            for name in runs:
                call(name, q)
        for i, q in enumerate(qs):
            got = {}
            for name in (a, b) if i % 2 else (b, a):
                ms, got[name] = call(name, q)
                times[name].append(ms)
            assert got[a] == got[b], (q, k)  # both exact: same rows, same order
        x, y = times[a], times[b]
        print(f"| {k} | {pct(x, 50):.3f} / {pct(x, 99):.2f} | {pct(y, 50):.3f} / "
              f"{pct(y, 99):.2f} | {pct(y, 50) / pct(x, 50):.2f} |")


if __name__ == "__main__":
    main()
