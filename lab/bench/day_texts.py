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
  ``--seconds``: the share ``--duplicates`` edited copies (1-6 edits) of
  stored texts, the rest new texts, each made once: lines drawn from several
  texts (with a corpus: a new text that shares sentences with stored ones,
  so its keys meet rows the rule must reject), else random vocabulary.
  ``bench text``'s mix draws its new texts from a pool the adds soon store,
  so most of its adds find a duplicate; an add that finds one costs less
  (an add looks up in two steps), so here the share is set, and printed
  beside what the adds found. Adds/s per window, and p50/p99 of the adds
  that found a duplicate and of those that stored their text.

The target (issue 28): 1M checks an hour, 278 adds/s, all through the day.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import click
import numpy as np

from lab.bench import text as bench_text
from lab.bench.rows import Segment, copy_rows, last_id, profile, two_days
from lab.bench.scale import _settle, _sizes, _store_real, partition_rows
from lab.bench.timing import pct, run_clients, server_line
from lab.connect import connect as store_connect

__all__ = ["run"]

TARGET = 1_000_000 / 3600  # a million checks an hour
# Without --corpus: the synthetic texts stored, whose edited copies are the duplicates
# (module state, set before the add clients are forked)
_SYNTHETIC: list[str] = []


@dataclass(frozen=True)
class Point:
    """The adds at one point of the day."""

    today: int  # rows in today's partition (synthetic; --again: all of the newest's)
    rows: int  # rows in the store
    rate: float  # adds/s, all clients
    windows: list[float]
    p50: float
    p99: float
    dups: float  # share of adds that found a stored near-duplicate
    p50_found: float  # p50 of the adds that found one
    p50_stored: float  # p50 of those that stored their text


def _texts(seed: int, duplicates: float) -> Iterator[str]:
    """An add's texts: the share ``duplicates`` edited copies of stored texts, the rest new."""
    rnd = random.Random(seed)
    real = bench_text._STORED
    stored = real or _SYNTHETIC
    lines = [line for t in (*real, *bench_text._HELD) for line in t.splitlines()
             if len(line) > 40]
    while True:
        if stored and rnd.random() < duplicates:
            yield bench_text.edit_text(rnd, rnd.choice(stored), rnd.randint(1, 6))
        elif lines:  # as many lines as a stored text has, from anywhere in the corpus
            yield "\n".join(rnd.choices(lines, k=max(2, rnd.choice(real).count("\n") + 1)))
        else:
            yield bench_text._sentences(rnd.choices(bench_text._VOCAB, k=120))


def _adder(args: tuple[str, int, float, float, Any, Any]) -> None:
    """One client: add() texts until the deadline; (seconds since start, ms, found) each."""
    dsn, seed, seconds, duplicates, barrier, out = args
    from simhash_pg.store import SimhashStore
    from simhash_pg.text.simhash import NoFeaturesError

    texts = _texts(seed, duplicates)
    got: list[tuple[float, float, bool]] = []
    with SimhashStore(dsn) as store:  # the default store
        for _ in range(5):  # warm-up: imports, prepared statements
            store.add(next(texts))
        barrier.wait()
        start = time.perf_counter()
        while (now := time.perf_counter()) < start + seconds:
            try:
                r = store.add(next(texts))
            except NoFeaturesError:
                continue
            done = time.perf_counter()
            got.append((done - start, (done - now) * 1000, not r.inserted))
    out.put(got)


def _adds(dsn: str, clients: int, seconds: float, windows: int, duplicates: float, seed: int,
          today: int, rows: int) -> Point:
    results = run_clients(_adder, [(dsn, seed * 1_000 + c, seconds, duplicates)
                                   for c in range(clients)], seconds)
    adds = [a for per in results for a in per]
    lat = [ms for _, ms, _ in adds]
    edges = np.linspace(0, seconds, windows + 1).tolist()
    per_window = [sum(lo < t <= hi for t, _, _ in adds) / (hi - lo)
                  for lo, hi in pairwise(edges)]
    found = [ms for _, ms, d in adds if d] or [float("nan")]
    stored = [ms for _, ms, d in adds if not d] or [float("nan")]
    return Point(today, rows, len(adds) / seconds, per_window, pct(lat, 50), pct(lat, 99),
                 sum(d for *_, d in adds) / max(len(adds), 1), pct(found, 50), pct(stored, 50))


def run(dsn: str, per_day: int, points: list[float], clients: int, seconds: float,
        windows: int, seed: int, text_chars: int, boilerplate: float, stored_count: int,
        duplicates: float) -> None:
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
         f"of add() per point, the default store, {100 * duplicates:g}% of the texts edited "
         f"copies of stored ones; seed={seed}")
    with store_connect(dsn) as conn:
        echo(server_line(conn))
        days = two_days(conn)

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
    _SYNTHETIC[:] = [] if bench_text._STORED else stored
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
        got.append(_adds(dsn, clients, seconds, windows, duplicates, seed + 7_919 * (i + 1),
                         size, rows))
        x = got[-1]
        echo(f"today at {size:,} rows ({rows:,} in the store): {x.rate:,.0f} adds/s, p50 "
             f"{x.p50:.2f} ms, p99 {x.p99:.2f}, {100 * x.dups:.0f}% found a duplicate (p50 "
             f"{x.p50_found:.2f} ms; the others {x.p50_stored:.2f})")
    _table(got, clients)


def again(dsn: str, clients: int, seconds: float, windows: int, seed: int,
          duplicates: float, stored_count: int) -> None:
    """The adds once more on the store an earlier run left (``--again``): no fill, no
    checkpoint, the server's cache as it is; ``today`` is the newest partition's rows."""
    echo = click.echo
    _SYNTHETIC[:] = [] if bench_text._STORED else bench_text.texts_to_store(seed, stored_count)[1]
    with store_connect(dsn) as conn:
        shared = conn.execute("SHOW shared_buffers").fetchone()[0]  # type: ignore[index]
        parts = partition_rows(conn)
        echo(f"simhash-pg bench day --texts --again: rows "
             f"{', '.join(f'{p} {n:,}' for p, n in parts)}; shared_buffers {shared}; "
             f"{clients} clients x {seconds:g} s of add(), {100 * duplicates:g}% of the texts "
             f"edited copies of stored ones; seed={seed}")
        echo(server_line(conn))
    rows = sum(n for _, n in parts)
    # "today": the newest partition's rows (the adds of a run that crossed midnight aside);
    # the texts seeded by the store's size too, so that each run adds texts no run stored
    x = _adds(dsn, clients, seconds, windows, duplicates, seed + 104_729 * rows, parts[-1][1],
              rows)
    _table([x], clients)


def _table(points: list[Point], clients: int) -> None:
    echo = click.echo
    head = (f"{'today rows':>11} {'store rows':>11} {'adds/s':>7} {'per window':<28} "
            f"{'p50 ms':>7} {'p99 ms':>7} {'found':>6} {'p50 found':>10} {'p50 stored':>11}")
    echo("")
    echo(head)
    echo("-" * len(head))
    for x in points:
        echo(f"{x.today:>11,} {x.rows:>11,} {x.rate:>7,.0f} "
             f"{' '.join(f'{w:,.0f}' for w in x.windows):<28} {x.p50:>7.2f} {x.p99:>7.2f} "
             f"{100 * x.dups:>5.0f}% {x.p50_found:>10.2f} {x.p50_stored:>11.2f}")
    low = min(x.rate for x in points)
    echo(f"verified text adds (add(), the default store, {clients} clients, one text and one "
         f"commit each): lowest {low:,.0f}/s = {low / TARGET:.1f}x the target of 1M an hour "
         f"({TARGET:.0f}/s, issue 28)")
