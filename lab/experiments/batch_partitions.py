"""A batch look-up's cost with and without the partitions that hold no page (revision 0025).

    uv run python -m lab.experiments.batch_partitions --dsn DSN

On a store ``bench store --keep`` left (only read): ``simhash_near_many`` at
k = 3 as the store has it, against revision 0006's function (the one
``sql/0025_batch_partitions_drop.sql`` restores, made a temporary function
of this session: every partition probed), interleaved, the order reversed
every other round. First batches of 5,000 fingerprints, half near copies
(1-3 bits) of stored rows, half random; then random batches by size, where
the planning per call shows.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import click
import numpy as np
import psycopg

from simhash_pg.db.resources import read_sql

OLD = "pg_temp.simhash_near_many_0006"
CALLS = {
    "0025 (the store's)": "SELECT count(*) FROM simhash_near_many(%s::bigint[], 3)",
    "0006 (every partition)": f"SELECT count(*) FROM {OLD}(%s::bigint[], 3)",
}


@click.command()
@click.option("--dsn", required=True)
@click.option("--rounds", default=12, show_default=True)
@click.option("--sizes", default="1,10,100,300,1000,3000", show_default=True)
@click.option("--seed", default=7, show_default=True)
def main(dsn: str, rounds: int, sizes: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(read_sql("0025_batch_partitions_drop.sql").replace(
            "FUNCTION simhash_near_many(", f"FUNCTION {OLD}("))
        stored = [r[0] for r in c.execute(
            "SELECT fingerprint FROM simhash_documents TABLESAMPLE SYSTEM (1) LIMIT 2500")]
        times = _race(c, rounds, lambda: [*_random(rng, 5_000 - len(stored)),
                                          *_near_copies(rng, stored)])
        click.echo("5,000 fingerprints, half near copies of stored rows: "
                   + ", ".join(f"{v} {ms:.1f} ms" for v, ms in times.items())
                   + f" ({_ratio(times):.2f}x)")
        for n in (int(x) for x in sizes.split(",")):
            times = _race(c, rounds if n >= 1_000 else 3 * rounds, lambda n=n: _random(rng, n))
            click.echo(f"{n:,} random fingerprints: "
                       + ", ".join(f"{v} {ms:.2f} ms" for v, ms in times.items())
                       + f" ({_ratio(times):.2f}x)")


def _race(c: psycopg.Connection[Any], rounds: int, batch: Any) -> dict[str, float]:
    """Median ms per call of each variant over the rounds (the first dropped: warm-up)."""
    took: dict[str, list[float]] = {v: [] for v in CALLS}
    for r in range(rounds + 1):
        fps = batch()
        order = list(CALLS.items()) if r % 2 == 0 else list(CALLS.items())[::-1]
        for v, q in order:
            t = time.perf_counter()
            c.execute(q, [fps], prepare=True).fetchall()
            if r:
                took[v].append(time.perf_counter() - t)
    return {v: statistics.median(ts) * 1000 for v, ts in took.items()}


def _ratio(times: dict[str, float]) -> float:
    new, old = times.values()
    return new / old


def _random(rng: np.random.Generator, n: int) -> list[int]:
    return rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64).tolist()


def _near_copies(rng: np.random.Generator, stored: list[int]) -> list[int]:
    out = []
    for f in stored:
        u = f & (2**64 - 1)
        for b in rng.choice(64, size=int(rng.integers(1, 4)), replace=False):
            u ^= 1 << int(b)
        out.append(u - 2**64 if u >= 2**63 else u)
    return out


if __name__ == "__main__":
    main()
