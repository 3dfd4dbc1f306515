"""Bulk adds right after a CHECKPOINT and without one, with the WAL's page images per row.

    uv run python -m lab.experiments.bulk_fpi --dsn DSN

On a store ``bench scale --keep`` left (a scratch store: it adds texts):
``add_many(dedup=False)`` of 10,000 new synthetic news texts three times,
the first right after a CHECKPOINT, then twice more without one; docs/s,
and the full-page images and WAL bytes per row from pg_stat_wal. After a
checkpoint each index page an add touches first writes a full 8 kB image,
and a bigger store has more pages to touch: ``bench scale``'s bulk figure
is timed right after its settle's CHECKPOINT.
"""

from __future__ import annotations

import time
from typing import Any

import click
import psycopg

from lab.bench import day as bench_day
from lab.bench.rows import synthetic_texts
from simhash_pg import SimhashStore


@click.command()
@click.option("--dsn", required=True)
@click.option("--texts", default=10_000, show_default=True)
@click.option("--text-chars", default=400, show_default=True)
@click.option("--seed", default=7_000, show_default=True)
def main(dsn: str, texts: int, text_chars: int, seed: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as c, SimhashStore(dsn, migrate=False) as store:
        rows = c.execute("SELECT count(*) FROM simhash_documents").fetchone()[0]  # type: ignore[index]
        for i, checkpoint in enumerate((True, False, False)):
            batch = synthetic_texts("news", texts, text_chars, seed + i)
            if checkpoint:
                c.execute("CHECKPOINT")
            fpi0, bytes0 = _wal(c)
            t = time.perf_counter()
            store.add_many(batch, dedup=False)
            took = time.perf_counter() - t
            time.sleep(0.6)  # the statistics flushed
            fpi1, bytes1 = _wal(c)
            click.echo(f"{rows:,} rows, {'after a CHECKPOINT' if checkpoint else 'no checkpoint'}"
                       f": {texts / took:,.0f} docs/s; full-page images {(fpi1 - fpi0) / texts:.2f}"
                       f" a row, WAL {(bytes1 - bytes0) / texts:,.0f} B a row")


def _wal(c: psycopg.Connection[Any]) -> tuple[int, int]:
    """Full-page images and WAL bytes so far: bench day's counters."""
    return bench_day._wal(c)[:2]


if __name__ == "__main__":
    main()
