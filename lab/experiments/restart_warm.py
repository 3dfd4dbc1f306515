"""A store's first text look-ups after a restart: cold, after ``simhash-pg warm``, and
with the embedded server's autoprewarm (simhash_pg/store/warm.py).

On the data directory a ``bench scale ... --keep --home DIR`` run left (its
server stopped or running), as root (it drops the OS page cache before each
start, as a reboot would)::

    uv run python -m lab.experiments.restart_warm --home DIR \\
        --corpus ../shared/eval/corpus_en.jsonl --corpus ../shared/eval/corpus_zh.jsonl

First it reads the store in and asks a batch of texts, so that the buffers
hold what a running store's do, and has autoprewarm record them. Then, per
round: a start with autoprewarm off (cold), a start followed by ``simhash-pg
warm``, and a start with autoprewarm on, waited for. Each asks ``near()`` for
its own batch of corpus texts, so that no phase reads another's pages.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import click
import psycopg

from lab.bench.text import read_corpus
from simhash_pg import SimhashStore
from simhash_pg.db.server import LocalServer


def _near_times(dsn: str, texts: Sequence[str]) -> str:
    with SimhashStore(dsn, migrate=False) as store:
        ms = []
        for text in texts:
            t0 = time.perf_counter()
            store.near(text)
            ms.append((time.perf_counter() - t0) * 1000)
    return (f"near() p50 {statistics.median(ms):.2f} ms, p90 "
            f"{statistics.quantiles(ms, n=10)[8]:.2f}, all {sum(ms) / 1000:.1f} s")


def _autoprewarm(dsn: str, on: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET pg_prewarm.autoprewarm = {'on' if on else 'off'}")


def _waited_for_autoprewarm(dsn: str) -> float:
    """Seconds until autoprewarm's loading workers are gone (its leader stays)."""
    t0 = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        time.sleep(1)
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type"
                           " = 'autoprewarm worker'").fetchone() != (0,):
            time.sleep(0.5)
    return time.perf_counter() - t0


@click.command()
@click.option("--home", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="The kept bench server's directory (bench scale --keep --home DIR).")
@click.option("--dbname", default="simhash_bench", show_default=True)
@click.option("--corpus", multiple=True, required=True)
@click.option("--queries", default=200, show_default=True, help="Texts a phase asks.")
@click.option("--rounds", default=2, show_default=True)
def main(home: Path, dbname: str, corpus: tuple[str, ...], queries: int, rounds: int) -> None:
    server = LocalServer(home)
    texts = read_corpus(corpus, 7)
    batches = [texts[i * queries:(i + 1) * queries] for i in range(1 + 3 * rounds)]
    if len(batches[-1]) < queries:
        raise click.UsageError(f"the corpus holds {len(texts):,} texts: too few for "
                               f"{len(batches)} batches of {queries}")
    warm = [sys.executable, "-m", "simhash_pg.cli", "warm", "--dsn"]

    def start() -> str:
        server.stop()
        subprocess.run("sync; echo 3 > /proc/sys/vm/drop_caches", shell=True, check=True)
        return server.start(dbname=dbname)

    dsn = server.start(dbname=dbname)
    _autoprewarm(dsn, True)
    dsn = start()
    subprocess.run([*warm, dsn], check=True, capture_output=True)
    click.echo(f"running store, read in and asked: {_near_times(dsn, batches[0])}")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT public.autoprewarm_dump_now()")
    try:
        for r in range(rounds):
            cold, warmed, auto = batches[1 + 3 * r: 4 + 3 * r]
            _autoprewarm(dsn, False)
            dsn = start()
            click.echo(f"[{r}] cold: {_near_times(dsn, cold)}")
            dsn = start()
            t0 = time.perf_counter()
            out = subprocess.run([*warm, dsn], check=True, capture_output=True, text=True)
            took = time.perf_counter() - t0
            click.echo(f"[{r}] simhash-pg warm, {took:.1f} s: {out.stdout.splitlines()[0]}")
            click.echo(f"[{r}] after it: {_near_times(dsn, warmed)}")
            _autoprewarm(dsn, True)
            dsn = start()
            click.echo(f"[{r}] autoprewarm done {_waited_for_autoprewarm(dsn):.1f} s after "
                       f"the start; then: {_near_times(dsn, auto)}")
    finally:
        _autoprewarm(dsn, True)


if __name__ == "__main__":
    main()
