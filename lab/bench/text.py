"""``simhash-pg bench text``: text ``near()`` and verified text adds under each verify mode.

The store is filled with ``--n`` random fingerprints by COPY (``bulk_load``)
plus ``--texts`` synthetic news-like texts (families of a seed text and
copies with a few word edits) stored with their verification texts. Then,
side by side in one run, for ``off``, ``short`` and ``all`` (the default:
margin-ranked probes for long texts, docs/design.md "Probe forms"):

- text ``near()``: p50/p99 over edited copies of stored texts, the modes
  interleaved query by query so that they share cache and load;
- verified text adds/s with ``--clients`` processes (dedup on, each add its
  own transaction and lock set), ``--seconds`` per mode, the modes taking
  turns in ``--rounds`` windows so that load and store growth hit them alike.

``--corpus FILE`` (repeatable) replaces the synthetic texts with real ones:
``--texts`` of them are stored (no families: a query's near-duplicate is
its one source, and unrelated texts lie ~32 bits away, as in a real store),
the queries are edited copies of stored texts (1-8 word edits, or character
edits for text without spaces), and the adds are half edited copies, half
texts held back.

Runs on a throwaway server (deleted afterwards unless --keep), or on --dsn,
whose database it EMPTIES (downgrade to base, upgrade).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from lab.bench._scratch import scratch_dsn, scratch_options
from lab.bench.timing import pct, run_clients
from lab.connect import connect as store_connect

MODES = ("off", "short", "all")
F = TypeVar("F", bound=Callable[..., Any])
_VOCAB = (
    "market stocks oil rally falls rise bank rates city council vote school budget storm "
    "warning river flood police report new plan train strike airport delay winter heat "
    "record crowd museum opens bridge closed election result tax cut hospital nurses "
    "minister said on tuesday after the talks that prices would keep climbing through "
    "spring while unions warned of further action across the region and its ports "
    "officials expect growth to slow as exports weaken and consumers spend less money"
).split()


def _sentences(words: list[str]) -> str:
    return ". ".join(" ".join(words[j : j + 12]).capitalize()
                     for j in range(0, len(words), 12)) + "."


def edit(rnd: random.Random, words: list[str], edits: int,
         vocab: Sequence[str] = _VOCAB) -> list[str]:
    """``edits`` random token edits (drop, add or replace a token drawn from ``vocab``)."""
    w = list(words)
    for _ in range(edits):
        i = rnd.randrange(len(w))
        op = rnd.choice(("drop", "add", "replace"))
        if op == "drop" and len(w) > 10:
            del w[i]
        elif op == "add":
            w.insert(i, rnd.choice(vocab))
        else:
            w[i] = rnd.choice(vocab)
    return w


def make_texts(seed: int, families: int, copies: int) -> list[list[list[str]]]:
    """Families of word lists: a seed text (80-200 words) and edited copies."""
    rnd = random.Random(seed)
    out = []
    for _ in range(families):
        words = rnd.choices(_VOCAB, k=rnd.randint(80, 200))
        out.append([words] + [edit(rnd, words, rnd.randint(1, 8)) for _ in range(copies)])
    return out


# --corpus: real texts, set before the clients are forked (shared, not copied):
# the stored ones, and those held back as the adds' new texts
_STORED: list[str] = []
_HELD: list[str] = []


def read_corpus(paths: tuple[str, ...], seed: int) -> list[str]:
    """The ``text`` of every line of JSONL files, shuffled by ``seed``."""
    import json

    texts: list[str] = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            texts += [t for t in (json.loads(line).get("text") for line in f if line.strip())
                      if isinstance(t, str) and t.strip()]
    if not texts:
        raise click.UsageError(f"{', '.join(paths)}: no line with a non-empty 'text'")
    random.Random(seed).shuffle(texts)
    return texts


def edit_text(rnd: random.Random, text: str, edits: int) -> str:
    """A real text with ``edits`` token edits: words where it has spaces, else characters."""
    spaced = text.count(" ") * 20 > len(text)
    tokens = text.split(" ") if spaced else list(text)
    return (" " if spaced else "").join(edit(rnd, tokens, edits, vocab=tokens))


def _client_text(rnd: random.Random, fams: list[list[list[str]]]) -> str:
    """An add's text: half new texts, half edited copies of stored ones."""
    if _STORED:
        if rnd.random() < 0.5:
            return edit_text(rnd, rnd.choice(_STORED), rnd.randint(1, 6))
        return rnd.choice(_HELD) if _HELD else edit_text(rnd, rnd.choice(_STORED), 40)
    words = rnd.choice(fams)[0] if rnd.random() < 0.5 else rnd.choices(_VOCAB, k=120)
    return _sentences(edit(rnd, words, rnd.randint(1, 6)))


def _client(args: tuple[str, str, int, float, Any, Any]) -> None:
    dsn, mode, seed, seconds, barrier, out = args
    from simhash_pg.store import SimhashStore
    from simhash_pg.text.simhash import NoFeaturesError

    rnd = random.Random(seed)
    fams = make_texts(seed, 200, 0)
    lat: list[float] = []
    dups = 0
    with SimhashStore(dsn, verify=mode) as store:  # type: ignore[arg-type]
        for _ in range(5):  # warm-up: prepared statements
            store.add(_client_text(rnd, fams))
        barrier.wait()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            text = _client_text(rnd, fams)
            t = time.perf_counter()
            try:
                r = store.add(text)
            except NoFeaturesError:
                continue  # a title edited 40 times can lose every word: no add to time
            lat.append((time.perf_counter() - t) * 1000)
            dups += not r.inserted
    out.put((lat, dups))


def adds(dsn: str, clients: int, seconds: float, seed: int,
         rounds: int) -> dict[str, dict[str, float]]:
    """Verified text adds/s per mode, the modes taking turns: ``rounds`` windows of
    ``seconds / rounds`` each, so that they share the machine's load and the
    store's growth (a mode measured after the others would meet a larger store)."""
    lat: dict[str, list[list[float]]] = {m: [[] for _ in range(clients)] for m in MODES}
    dups = dict.fromkeys(MODES, 0)
    for r in range(rounds):
        for i, m in enumerate(MODES):
            results = run_clients(_client, [(dsn, m, seed * 100 + i + 7919 * c + 104729 * r,
                                              seconds / rounds) for c in range(clients)],
                                  seconds / rounds)
            for c, (lt, dp) in enumerate(results):
                lat[m][c] += lt
                dups[m] += dp
    out = {}
    for m in MODES:
        flat = [x for per in lat[m] for x in per]
        out[m] = {"adds_s": sum(len(per) / (sum(per) / 1000) for per in lat[m] if per),
                  "p50": pct(flat, 50), "p99": pct(flat, 99),
                  "dups": dups[m] / max(len(flat), 1)}
    return out


def measure_options(func: F) -> F:
    """--queries, --clients, --seconds and --rounds: how bench text and bench scale measure."""
    options: tuple[Callable[[F], F], ...] = (
        click.option("--queries", type=click.IntRange(10), default=500, show_default=True,
                     help="Text near() queries per mode."),
        click.option("--clients", type=click.IntRange(1), default=2, show_default=True),
        click.option("--seconds", type=click.FloatRange(1), default=10.0, show_default=True,
                     help="Time per mode for the adds."),
        click.option("--rounds", type=click.IntRange(1), default=4, show_default=True,
                     help="The adds' modes take turns in this many windows each."),
    )
    for option in reversed(options):
        func = option(func)
    return func


@click.command("text")
@click.option("--n", "n", type=click.IntRange(1000), default=1_000_000, show_default=True,
              help="Random fingerprints stored (COPY) besides the texts.")
@click.option("--texts", type=click.IntRange(10), default=3000, show_default=True,
              help="Synthetic texts stored with their verification texts.")
@measure_options
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), multiple=True,
              help="Real texts instead of the synthetic ones: a JSONL file with a 'text' "
              "per line (e.g. ../shared/eval/corpus_en.jsonl; repeatable). --texts of them "
              "are stored, the rest are the adds' new texts.")
@click.option("--seed", type=int, default=1, show_default=True)
@scratch_options
def command(n: int, texts: int, queries: int, clients: int, seconds: float, rounds: int,
            corpus: tuple[str, ...], seed: int, dsn: str | None, home: str | None,
            keep: bool) -> None:
    """Text near() p50/p99 and verified text adds/s under off, short and all."""
    if corpus:
        real = read_corpus(corpus, seed)
        _STORED[:], _HELD[:] = real[:texts], real[texts:]
    with scratch_dsn(dsn, home=home, keep=keep) as url:
        _run(url, n, texts, queries, clients, seconds, seed, rounds)


def _run(dsn: str, n: int, texts: int, queries: int, clients: int, seconds: float,
         seed: int, rounds: int = 4) -> None:

    from lab.bench.store import make_data
    from lab.bench.stream import _prewarm
    from simhash_pg.db import migrate
    from simhash_pg.store import SimhashStore

    echo = click.echo
    migrate.downgrade(dsn, "base")
    migrate.upgrade(dsn)
    with store_connect(dsn) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    source = (f"{len(_STORED):,} corpus texts ({len(_HELD):,} held back for the adds)"
              if _STORED else f"{texts:,} synthetic texts")
    echo(f"simhash-pg bench text: n={n:,} random rows + {source}, {queries} queries "
         f"per mode, {clients} clients x {seconds:g} s per mode in {rounds} turns, seed={seed}")
    echo(f"PostgreSQL {version}, {multiprocessing.cpu_count()} cores")
    t = time.perf_counter()
    fams, stored = texts_to_store(seed, texts)
    with SimhashStore(dsn, verify="all") as store:
        store.bulk_load(make_data(n, seed, False))
        store.add_many(stored, dedup=False)
    with store_connect(dsn) as conn:
        conn.execute("CHECKPOINT")
        warmed = _prewarm(conn)
    echo(f"loaded {n:,} fingerprints and {len(stored):,} texts, checkpoint, warm-up "
         f"({warmed}) in {time.perf_counter() - t:.1f} s")
    qs = make_queries(seed, fams, queries)
    lat, found = near_side_by_side(dsn, qs)
    print_table(lat, found, len(qs), adds(dsn, clients, seconds, seed, rounds))


def texts_to_store(seed: int, texts: int) -> tuple[list[list[list[str]]], list[str]]:
    """The synthetic families (the adds' and queries' seeds) and the texts to store:
    the --corpus texts if set, else ``texts`` synthetic ones in families of ten."""
    copies = 9
    fams = make_texts(seed, max(1, texts // (copies + 1)), copies)
    return fams, list(_STORED) or [_sentences(w) for f in fams for w in f]


def make_queries(seed: int, fams: list[list[list[str]]], queries: int) -> list[str]:
    """Edited copies (1-8 edits) of stored texts: the --corpus ones, else the families' seeds."""
    rnd = random.Random(seed + 1)
    if _STORED:
        return [edit_text(rnd, rnd.choice(_STORED), rnd.randint(1, 8)) for _ in range(queries)]
    return [_sentences(edit(rnd, rnd.choice(fams)[0], rnd.randint(1, 8)))
            for _ in range(queries)]


# near_side_by_side's extra "mode": "all" with long texts probing single blocks
SINGLE_BLOCKS = "all, single blocks"


def near_side_by_side(dsn: str, qs: list[str]) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Text near() ms per query and mode, and the queries each mode found a match for;
    the modes interleaved query by query, so that they share cache and load. When
    the store records pair probes, also :data:`SINGLE_BLOCKS` (as before revision 0019)."""
    from simhash_pg.store import SimhashStore

    lat: dict[str, list[float]] = {m: [] for m in MODES}
    found: dict[str, int] = dict.fromkeys(MODES, 0)
    stores = {m: SimhashStore(dsn, verify=m) for m in MODES}  # type: ignore[arg-type]
    if stores["all"].policy.probe_pairs is not None:
        # and "all" as before revision 0019 (long texts by single blocks), beside it
        single = SimhashStore(dsn, verify="all")
        single.policy = dataclasses.replace(single.policy, probe_pairs=None)
        stores[SINGLE_BLOCKS] = single
        lat[SINGLE_BLOCKS], found[SINGLE_BLOCKS] = [], 0
    try:
        for s in stores.values():  # warm-up
            for q in qs[:10]:
                s.near(q)
        for q in qs:
            for m, s in stores.items():
                t = time.perf_counter()
                hits = s.near(q)
                lat[m].append((time.perf_counter() - t) * 1000)
                found[m] += bool(hits)
    finally:
        for s in stores.values():
            s.close()
    return lat, found


def print_table(lat: dict[str, list[float]], found: dict[str, int], queries: int,
                figures: dict[str, dict[str, float]]) -> None:
    """The modes' near() and adds figures, one line each."""
    echo = click.echo
    head = (f"{'mode':<6} {'near p50':>9} {'near p99':>9} {'found':>6} {'adds/s':>8} "
            f"{'add p50':>8} {'add p99':>8} {'dups':>5}")
    echo(head)
    echo("-" * len(head))
    for m in MODES:
        f = figures[m]
        echo(f"{m:<6} {pct(lat[m], 50):>9.2f} {pct(lat[m], 99):>9.2f} "
             f"{100 * found[m] / queries:>5.0f}% {f['adds_s']:>8,.0f} {f['p50']:>8.2f} "
             f"{f['p99']:>8.2f} {100 * f['dups']:>4.0f}%")
    echo("near: ms per text query (fingerprinting included), found = share of queries "
         "with a match; adds: verified text adds with dedup, ms per add. Targets (issue "
         "14): at 'all', adds/s >= 0.8x and near p50 <= 1.5x those of 'short'.")
