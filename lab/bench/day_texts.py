"""``simhash-pg bench day --texts``: verified text adds through a day, in a store of text rows.

    uv run simhash-pg bench day --texts --per-day 24000000 --corpus ../shared/eval/corpus_en.jsonl

Issue 28, item 4: a user's day is a two-day window of ~24M texts a day, and
clients adding texts, each checked against the store (the default store:
verify ``all``, an add stores a text only if no near-duplicate is stored).
``bench day`` (fingerprints) lays out each point of the day anew; text rows
carry keys and verification texts, so here one store grows instead:

- yesterday's partition is filled with ``--per-day`` text-shaped rows (the
  generator of ``bench scale``, lab/bench/rows.py: verification texts, keys,
  boilerplate, near-copy families), keys in bulk, then ``--stored`` real
  texts are stored by the product (the adds' edited copies find them);
- today's partition grows to each point of ``--at`` by the same generator
  (other rows: a second stream), ids and times continuing after what the
  adds stored before;
- at each point: VACUUM (ANALYZE), CHECKPOINT, prewarm (as ``bench scale``),
  then ``--clients`` processes add texts one by one with ``add()`` for
  ``--seconds``: half edited copies of stored texts, half new ones (``bench
  text``'s mix); adds/s per window, add p50/p99, and the share that found a
  duplicate.

The target (issue 28): 1M checks an hour, 278 adds/s, all through the day.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from typing import Any

import click
import numpy as np

from lab.bench import text as bench_text
from lab.bench.rows import Days, Segment, copy_rows, last_id, profile
from lab.bench.scale import _settle, _sizes, _store_real
from lab.bench.timing import pct, run_clients
from lab.connect import connect as store_connect

__all__ = ["run"]

TARGET = 1_000_000 / 3600  # a million checks an hour


@dataclass(frozen=True)
class Point:
    """The adds at one point of the day."""

    today: int  # synthetic rows in today's partition
    rows: int  # rows in the store
    rate: float  # adds/s, all clients
    windows: list[float]
    p50: float
    p99: float
    dups: float  # share of adds that found a stored near-duplicate


def _adder(args: tuple[str, int, float, Any, Any]) -> None:
    """One client: add() texts until the deadline; (seconds since start, ms, found) each."""
    dsn, seed, seconds, barrier, out = args
    from simhash_pg.store import SimhashStore
    from simhash_pg.text.simhash import NoFeaturesError

    rnd = random.Random(seed)
    fams = bench_text.make_texts(seed, 200, 0)
    got: list[tuple[float, float, bool]] = []
    with SimhashStore(dsn) as store:  # the default store
        for _ in range(5):  # warm-up: imports, prepared statements
            store.add(bench_text._client_text(rnd, fams))
        barrier.wait()
        start = time.perf_counter()
        while (now := time.perf_counter()) < start + seconds:
            try:
                r = store.add(bench_text._client_text(rnd, fams))
            except NoFeaturesError:
                continue
            done = time.perf_counter()
            got.append((done - start, (done - now) * 1000, not r.inserted))
    out.put(got)


def _adds(dsn: str, clients: int, seconds: float, windows: int, seed: int,
          today: int, rows: int) -> Point:
    results = run_clients(_adder, [(dsn, seed * 1_000 + c, seconds) for c in range(clients)],
                          seconds)
    adds = [a for per in results for a in per]
    lat = [ms for _, ms, _ in adds]
    edges = np.linspace(0, seconds, windows + 1).tolist()
    per_window = [sum(lo < t <= hi for t, _, _ in adds) / (hi - lo)
                  for lo, hi in pairwise(edges)]
    return Point(today, rows, len(adds) / seconds, per_window, pct(lat, 50), pct(lat, 99),
                 sum(d for *_, d in adds) / max(len(adds), 1))


def run(dsn: str, per_day: int, points: list[float], clients: int, seconds: float,
        windows: int, seed: int, text_chars: int, boilerplate: float, stored_count: int) -> None:
    """The whole benchmark on ``dsn``, which it EMPTIES."""
    from simhash_pg.db import migrate

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    p = profile("news", text_chars, seed)
    echo(f"simhash-pg bench day --texts: {per_day:,} news rows a day ({p.chars:.0f} characters "
         f"of verification text, {p.counts.mean():.2f} keys; {100 * boilerplate:g}% hold "
         f"boilerplate), yesterday's partition full, today's at "
         f"{', '.join(f'{x:g}' for x in points)} of a day; {clients} clients x {seconds:g} s "
         f"of add() per point, the default store; seed={seed}")
    with store_connect(dsn) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        echo(f"PostgreSQL {version}, {multiprocessing.cpu_count()} cores, load average "
             f"{os.getloadavg()[0]:.1f}")
        now = conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
        midnight = datetime.combine(now.astimezone(timezone.utc).date(), datetime.min.time(),
                                    timezone.utc)
        for day in (midnight - timedelta(days=1), midnight):
            conn.execute("SELECT simhash_create_partition(%s)", [day.date()])
        days = Days(*(int(x.timestamp() * 1_000_000)
                      for x in (midnight - timedelta(days=1), midnight, now)))

    def fill(seg: Segment, what: str) -> None:
        with store_connect(dsn) as conn:
            t = time.perf_counter()
            copy_rows(conn, p, seg, days, boilerplate, seed, keys_in_bulk=True)
            echo(f"{what}: {seg.hi - seg.lo:,} rows by binary COPY, keys in bulk, in "
                 f"{time.perf_counter() - t:.0f} s")

    with store_connect(dsn) as conn:
        after = last_id(conn)
    fill(Segment(0, per_day, per_day, after, yesterday=1.0), "yesterday")
    _, stored = bench_text.texts_to_store(seed, stored_count)
    _store_real(dsn, stored, p)
    got: list[Point] = []
    done = 0
    for i, fraction in enumerate(points):
        size = int(per_day * fraction)
        if size > done:
            with store_connect(dsn) as conn:
                after = last_id(conn)
            fill(Segment(done, size, per_day, after, yesterday=0.0, stream=1),
                 f"today to {size:,}")
            done = size
        with store_connect(dsn) as conn:
            _settle(conn)
            rows = _sizes(conn)
        got.append(_adds(dsn, clients, seconds, windows, seed + 7_919 * (i + 1), size, rows))
        x = got[-1]
        echo(f"today at {size:,} rows ({rows:,} in the store): {x.rate:,.0f} adds/s, p50 "
             f"{x.p50:.2f} ms, p99 {x.p99:.2f}, {100 * x.dups:.0f}% found a duplicate")
    _table(got, clients)


def _table(points: list[Point], clients: int) -> None:
    echo = click.echo
    head = (f"{'today rows':>11} {'store rows':>11} {'adds/s':>7} {'per window':<28} "
            f"{'p50 ms':>7} {'p99 ms':>7} {'dups':>5}")
    echo("")
    echo(head)
    echo("-" * len(head))
    for x in points:
        echo(f"{x.today:>11,} {x.rows:>11,} {x.rate:>7,.0f} "
             f"{' '.join(f'{w:,.0f}' for w in x.windows):<28} {x.p50:>7.2f} {x.p99:>7.2f} "
             f"{100 * x.dups:>4.0f}%")
    low = min(x.rate for x in points)
    echo(f"verified text adds (add(), the default store, {clients} clients, one text and one "
         f"commit each): lowest {low:,.0f}/s = {low / TARGET:.1f}x the target of 1M an hour "
         f"({TARGET:.0f}/s, issue 28)")
