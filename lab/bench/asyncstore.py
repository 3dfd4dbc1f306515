"""``simhash-pg bench async``: AsyncSimhashStore against SimhashStore, side by side.

Both stores sit on one database, one connection each. Per step, in turns
that alternate which goes first: text ``near()`` of the same query through
each, then ``add()`` of a new text through each (half of them edited copies
of stored texts, so dedup decides both ways). It prints p50, p99 and the
rate of each, and the async/sync ratio. The async store's cost over the
sync one is a thread hop per call, a constant: the smaller and the faster
the store, the larger its share, so a small scratch store gives the worst
ratio; ``--store`` measures a big one as it is (it adds ``--adds`` texts
per store to it and empties nothing).
"""

from __future__ import annotations

import asyncio
import random
import time

import click

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.rows import synthetic_texts
from lab.bench.text import edit_text
from lab.bench.timing import pct


@click.command("async")
@click.option("--n", "n", type=click.IntRange(100), default=20_000, show_default=True,
              help="Synthetic news texts stored first (add_many, dedup off) in a scratch store.")
@click.option("--queries", type=click.IntRange(10), default=1000, show_default=True)
@click.option("--adds", type=click.IntRange(10), default=1000, show_default=True,
              help="Texts added through each store.")
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--store", "store_dsn", default=None,
              help="Measure this existing store as it is (no fill, nothing emptied; "
                   "it gains 2 x --adds texts) instead of a scratch one.")
@scratch_options
def command(n: int, queries: int, adds: int, seed: int, store_dsn: str | None,
            dsn: str | None, home: str | None, keep: bool) -> None:
    """Text near() and add() through AsyncSimhashStore and SimhashStore, interleaved."""
    if store_dsn is not None:
        asyncio.run(_run(store_dsn, 0, queries, adds, seed))
        return
    with scratch_dsn(dsn, home=home, keep=keep) as url:
        asyncio.run(_run(url, n, queries, adds, seed))


async def _run(dsn: str, n: int, queries: int, adds: int, seed: int) -> None:
    from simhash_pg.store import AsyncSimhashStore, SimhashStore

    rnd = random.Random(seed)
    texts = synthetic_texts("news", n + queries + 2 * adds, 400, seed)
    with SimhashStore(dsn) as sync:
        if n:
            sync.add_many(texts[:n], dedup=False)
            sync.connection.execute("VACUUM ANALYZE")
        rows = sync.count()
        click.echo(f"simhash-pg bench async: {rows:,} rows, verify={sync.verify}, "
                   f"{queries} queries and {adds} adds per store, interleaved")
        stored = texts[:n] or [d.text for d in sync.recent(limit=queries) if d.text]
        qs = [edit_text(rnd, rnd.choice(stored), rnd.randint(0, 4)) for _ in range(queries)]
        fresh = texts[n + queries:]
        new = [edit_text(rnd, rnd.choice(stored), 2) if i % 2 else fresh[i]
               for i in range(2 * adds)]
        async with await AsyncSimhashStore.open(dsn) as asy:
            for q in qs[:20]:  # warm-up: plans, caches, the thread
                sync.near(q)
                await asy.near(q)
            lat: dict[str, list[float]] = {"near sync": [], "near async": [],
                                           "add sync": [], "add async": []}
            async def timed(name: str, kind: str, doc: str) -> None:
                t = time.perf_counter()
                if kind == "sync":
                    getattr(sync, name)(doc)
                else:
                    await getattr(asy, name)(doc)
                lat[f"{name} {kind}"].append((time.perf_counter() - t) * 1000)

            # in turns, each store first as often as the other
            for i, q in enumerate(qs):
                for kind in (("sync", "async") if i % 2 else ("async", "sync")):
                    await timed("near", kind, q)
            for i in range(adds):
                for j, kind in enumerate(("sync", "async") if i % 2 else ("async", "sync")):
                    await timed("add", kind, new[2 * i + j])
    click.echo(f"{'':12} {'p50 ms':>8} {'p99 ms':>8} {'per s':>8}")
    for name, ms in lat.items():
        click.echo(f"{name:12} {pct(ms, 50):8.3f} {pct(ms, 99):8.3f} "
                   f"{len(ms) / (sum(ms) / 1000):8.0f}")
    for op in ("near", "add"):
        ratio = sum(lat[f"{op} sync"]) / sum(lat[f"{op} async"])
        click.echo(f"{op}: async runs at {ratio:.3f}x the sync store's rate")
