"""What pinning the store's functions to its schema costs (revision 0022), side by side.

Revision 0022 gives every function of ours that reads a table a search_path
of its own (``SET search_path``), so that it works schema-qualified from any
session. PostgreSQL then saves and restores that setting around each call.
This measures the read paths with the pins and without them (``RESET
search_path``; the store's sessions find everything through their own
search_path either way), in alternating rounds, on one store:

    uv run python -m lab.experiments.search_path_pins --dsn DSN \\
        --corpus ../shared/eval/corpus_en.jsonl --corpus ../shared/eval/corpus_zh.jsonl

It leaves the pins as it found them. The writes go through the same pinned
functions (simhash_add, simhash_writer_lock); they are not timed here, as
each add changes the store.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import click

from lab.bench.text import read_corpus
from lab.connect import connect
from simhash_pg import SimhashStore

T = TypeVar("T")

_PINNED = r"""
SELECT p.oid::regprocedure::text FROM pg_proc p
WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'simhash\_%'
  AND NOT p.prosecdef AND EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')
"""


@click.command()
@click.option("--dsn", required=True)
@click.option("--corpus", "corpus", multiple=True, required=True)
@click.option("--queries", default=300, show_default=True)
@click.option("--rounds", default=4, show_default=True)
@click.option("--seed", default=1, show_default=True)
def main(dsn: str, corpus: tuple[str, ...], queries: int, rounds: int, seed: int) -> None:
    texts = read_corpus(corpus, seed)[:queries]
    rng = random.Random(seed)
    fps = [rng.getrandbits(64) for _ in range(queries)]
    with connect(dsn) as admin, SimhashStore(dsn, migrate=False) as store:
        pinned = [r[0] for r in admin.execute(_PINNED)]
        click.echo(f"{len(pinned)} pinned functions; store verify={store.verify}; "
                   f"{queries} queries per workload and round, {rounds} rounds")

        def pin(on: bool) -> None:
            for sig in pinned:
                admin.execute(f"ALTER FUNCTION {sig} "
                              + ("SET search_path FROM CURRENT" if on else "RESET search_path"))
            # the store's session re-plans its statements against the new definitions
            store.connection.execute("DISCARD PLANS")

        work: dict[str, Callable[[], list[float]]] = {
            "near text": lambda: _timed(lambda t: store.near(t), texts),
            "near_many 50 texts": lambda: _timed(lambda i: store.near_many(texts[i:i + 50]),
                                                 range(0, len(texts), 50)),
            "near fingerprint": lambda: _timed(lambda f: store.near(f), fps),
        }
        got: dict[tuple[str, bool], list[float]] = {
            (w, on): [] for w in work for on in (True, False)}
        try:
            for r in range(rounds):
                for on in ((True, False) if r % 2 == 0 else (False, True)):
                    pin(on)
                    for name, run in work.items():
                        run()  # warm: the same queries, untimed
                        got[(name, on)] += run()
        finally:
            pin(True)
    click.echo(f"{'workload':<22}{'pinned p50':>12}{'unpinned p50':>14}{'ratio':>8}"
               f"{'pinned p99':>12}{'unpinned p99':>14}")
    for name in work:
        a, b = got[(name, True)], got[(name, False)]
        click.echo(f"{name:<22}{_p(a, 50):>12.3f}{_p(b, 50):>14.3f}{_p(a, 50) / _p(b, 50):>8.3f}"
                   f"{_p(a, 99):>12.3f}{_p(b, 99):>14.3f}")
    click.echo("ms per call; ratio: pinned / unpinned (the price of revision 0022's pins)")


def _timed(call: Callable[[T], object], items: Iterable[T]) -> list[float]:
    out = []
    for item in items:
        t0 = time.perf_counter()
        call(item)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if q != 50 else statistics.median(values)


if __name__ == "__main__":
    main()
