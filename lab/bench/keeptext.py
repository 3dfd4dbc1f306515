"""``simhash-pg bench keep-text``: what keeping the text as written costs the writers.

Two stores on one database, ``keep_text=True`` (the default, revision 0021's
``body`` column) and ``keep_text=False``, one connection each. In turns that
alternate which goes first: ``add()`` of a new text through each (half of
them edited copies of stored texts, so dedup decides both ways), then
``add_many(dedup=True)`` of a batch of new texts through each. It prints
p50/p99 per add, docs/s per batch, and the ratio keep/without. ``--store``
measures an existing (big) store as it is: it gains the texts added.
``--verify off`` measures the add that goes through ``simhash_add`` (one
statement, the body one of its arguments since revision 0023); ``short`` and
``all`` verify in Python and insert the body with the row.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

import click

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.rows import synthetic_texts
from lab.bench.text import edit_text
from lab.bench.timing import pct
from simhash_pg.cli.options import verify_option

if TYPE_CHECKING:
    from simhash_pg.verify import VerifyMode


@click.command("keep-text")
@click.option("--n", "n", type=click.IntRange(100), default=20_000, show_default=True,
              help="Synthetic news texts stored first (add_many, dedup off) in a scratch store.")
@click.option("--adds", type=click.IntRange(10), default=1000, show_default=True,
              help="Single adds through each store.")
@click.option("--batches", type=click.IntRange(1), default=10, show_default=True,
              help="add_many batches through each store.")
@click.option("--batch-size", type=click.IntRange(10), default=500, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--store", "store_dsn", default=None,
              help="Measure this existing store as it is (no fill, nothing emptied; "
                   "it gains the added texts) instead of a scratch one.")
@verify_option("Both stores' verify mode: off (add() goes through simhash_add), short or "
               "all. Default: the store's own mode (a scratch store: all). With --store, "
               "a mode weaker than the recorded one still keeps the recorded one's texts.")
@scratch_options
def command(n: int, adds: int, batches: int, batch_size: int, seed: int,
            store_dsn: str | None, verify: VerifyMode | None, dsn: str | None,
            home: str | None, keep: bool) -> None:
    """add() and add_many() with and without the text as written, interleaved."""
    if store_dsn is not None:
        _run(store_dsn, 0, adds, batches, batch_size, seed, verify)
        return
    with scratch_dsn(dsn, home=home, keep=keep) as url:
        _run(url, n, adds, batches, batch_size, seed, verify)


def _run(dsn: str, n: int, adds: int, batches: int, batch_size: int, seed: int,
         verify: VerifyMode | None) -> None:
    from simhash_pg.store import SimhashStore

    rnd = random.Random(seed)
    # seeded apart from any earlier run's texts, so the adds are new to the store
    texts = synthetic_texts("news", n + 20 + 2 * adds + 2 * batches * batch_size, 400,
                            seed + 7919)
    with SimhashStore(dsn, verify=verify) as kept, \
            SimhashStore(dsn, verify=verify, keep_text=False) as bare:
        if n:
            kept.add_many(texts[:n], dedup=False)
            kept.connection.execute("VACUUM ANALYZE")
        # --store: its latest texts, as written (verify "off" keeps no other) or verified
        latest = (d.body or d.text for d in kept.recent(limit=1000))
        stored = texts[:n] or [text for text in latest if text]
        if not stored:
            raise click.ClickException("the store's latest 1,000 rows keep no text to edit")
        click.echo(f"simhash-pg bench keep-text: {kept.count():,} rows, verify={kept.verify}, "
                   f"{adds} adds and {batches} batches of {batch_size} per store, interleaved")
        fresh = iter(texts[n:])
        stores = {"keep": kept, "without": bare}
        for store in stores.values():  # warm-up: plans, caches (20 of the texts)
            for _ in range(10):
                store.add(next(fresh))
        ms: dict[str, list[float]] = {name: [] for name in stores}
        for i in range(adds):
            for name in (("keep", "without") if i % 2 else ("without", "keep")):
                doc = edit_text(rnd, rnd.choice(stored), 2) if i % 4 < 2 else next(fresh)
                t = time.perf_counter()
                stores[name].add(doc)
                ms[name].append((time.perf_counter() - t) * 1000)
        rate: dict[str, list[float]] = {name: [] for name in stores}
        for i in range(batches):
            for name in (("keep", "without") if i % 2 else ("without", "keep")):
                batch = [next(fresh) for _ in range(batch_size)]
                t = time.perf_counter()
                stores[name].add_many(batch, workers=1)
                rate[name].append(batch_size / (time.perf_counter() - t))
    click.echo(f"{'':8} {'add p50 ms':>11} {'add p99 ms':>11} {'add_many docs/s':>16}")
    for name in stores:
        click.echo(f"{name:8} {pct(ms[name], 50):11.3f} {pct(ms[name], 99):11.3f} "
                   f"{pct(rate[name], 50):16,.0f}")
    click.echo(f"keep/without: add p50 {pct(ms['keep'], 50) / pct(ms['without'], 50):.3f}x, "
               f"add_many docs/s {pct(rate['keep'], 50) / pct(rate['without'], 50):.3f}x")
