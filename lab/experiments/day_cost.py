"""Where a text's add and near() go in a big store, one client, with the buffers they read.

    uv run python -m lab.experiments.day_cost --dsn DSN \\
        --corpus ../shared/eval/corpus_en.jsonl --corpus ../shared/eval/corpus_zh.jsonl

On a store ``bench day --texts`` left (its --stored texts are the corpus's
first, shuffled by the same seed): text ``near()`` of edited copies of
stored texts and ``add()`` of new texts (``bench day --texts``' own), p50
and p99, with the blocks each call read from outside shared buffers and
hit inside (pg_stat_database); then a new text's add part by part: the
analysis, the first look-up step (keys and own block values), the second
(probes), and the write (the whole add less the rest, on the next text).
Run it after restarting the server with another shared_buffers to see
what the cache is worth. It adds texts: a scratch store only.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import click
import psycopg

from lab.bench import text as bench_text
from lab.bench.day_texts import _texts
from lab.bench.timing import pct
from simhash_pg import SimhashStore
from simhash_pg.bits import to_signed
from simhash_pg.store import lookup as lookup_mod
from simhash_pg.verify.candidates import text_and_vtext

_BLOCKS = "SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname = current_database()"


@click.command()
@click.option("--dsn", required=True)
@click.option("--corpus", multiple=True, required=True)
@click.option("--stored", default=3000, show_default=True,
              help="The earlier run's --stored: its first corpus texts are stored.")
@click.option("--queries", default=300, show_default=True)
@click.option("--seed", default=1, show_default=True, help="The earlier run's --seed.")
@click.option("--texts-seed", default=11, show_default=True,
              help="Seeds the texts: a new one per run, so that no run adds another's texts.")
def main(dsn: str, corpus: tuple[str, ...], stored: int, queries: int, seed: int,
         texts_seed: int) -> None:
    real = bench_text.read_corpus(corpus, seed)
    bench_text._STORED[:], bench_text._HELD[:] = real[:stored], real[stored:]
    rnd = random.Random(texts_seed)
    copies = [bench_text.edit_text(rnd, rnd.choice(real[:stored]), rnd.randint(1, 8))
              for _ in range(queries)]
    news = _texts(texts_seed, 0.0)
    with SimhashStore(dsn, migrate=False) as store, psycopg.connect(dsn, autocommit=True) as c:
        shared = c.execute("SHOW shared_buffers").fetchone()[0]  # type: ignore[index]
        rows = c.execute("SELECT count(*) FROM simhash_documents").fetchone()[0]  # type: ignore[index]
        click.echo(f"{rows:,} rows, shared_buffers {shared}; {queries} texts each")
        for q in copies[:5]:  # prepared statements
            store.near(q)
        _calls(c, "near() of edited copies", copies, store.near)
        _calls(c, "add() of new texts", [next(news) for _ in range(queries)], store.add)
        _parts(store, news, queries)


def _calls(c: psycopg.Connection[Any], label: str, texts: list[str],
           call: Callable[[str], Any]) -> None:
    time.sleep(0.6)  # the statistics of earlier calls flushed
    read0, hit0 = c.execute(_BLOCKS).fetchone()  # type: ignore[misc]
    lat = []
    for text in texts:
        t = time.perf_counter()
        call(text)
        lat.append((time.perf_counter() - t) * 1000)
    time.sleep(0.6)
    read1, hit1 = c.execute(_BLOCKS).fetchone()  # type: ignore[misc]
    n = len(texts)
    click.echo(f"{label:<26} p50 {pct(lat, 50):6.2f}  p99 {pct(lat, 99):6.2f} ms; blocks a "
               f"call: {(read1 - read0) / n:,.1f} read, {(hit1 - hit0) / n:,.0f} hit")


def _parts(store: SimhashStore, news: Any, count: int) -> None:
    conn, policy, k = store.connection, store.policy, store.k
    parts: dict[str, list[float]] = {p: [] for p in (
        "analysis", "look-up, first step", "look-up, second step", "the write (rest of add)",
        "add() whole")}
    for _ in range(count):
        text = next(news)
        t0 = time.perf_counter()
        fp, vt = text_and_vtext(store.fingerprinter, text, policy)
        t1 = time.perf_counter()
        if vt is None or fp is None:
            continue
        lookup_mod._rows(conn, [to_signed(fp)], [vt._replace(probes=lookup_mod.OWN_ONLY)], k,
                         policy)
        t2 = time.perf_counter()
        lookup_mod._rows(conn, [to_signed(fp)], [vt], k, policy, keys=False)
        t3 = time.perf_counter()
        other = next(news)  # the write on another new text: this one's look-ups are warm
        t4 = time.perf_counter()
        store.add(other)
        whole = time.perf_counter() - t4
        parts["analysis"].append(t1 - t0)
        parts["look-up, first step"].append(t2 - t1)
        parts["look-up, second step"].append(t3 - t2)
        parts["the write (rest of add)"].append(whole - (t3 - t0))
        parts["add() whole"].append(whole)
    click.echo("a new text's add, part by part:")
    for name, values in parts.items():
        click.echo(f"  {name:<26} p50 {1000 * pct(values, 50):6.2f}  p90 "
                   f"{1000 * pct(values, 90):6.2f} ms")


if __name__ == "__main__":
    main()
