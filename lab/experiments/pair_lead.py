"""Pairs led by fewer values: what a long text's pair scans cost with a short leading list.

A pair probe (revision 0019) asks, for some cyclic block i, for ``b_i`` among
the query's leading values of block i and ``b_(i+1)`` among its second values
of block i+1. Block i's index is ``(b_i, b_(i+1), fingerprint)``, so the btree
reads the pages under each *leading* value (~2 per partition at 50M rows) and
skips between the second values inside them: the scan's cost is set by the
leading list, while the second list costs little. Until revision 0024 both
lists were the same 32 margin-ranked values (since then 12 of 64 lead).
``lab.experiments.pair_probes`` (variants ``0:S:f:8:L``) gives the recall of
a leading list of L values with a second list of S; this gives the cost, on a
bench store:

    uv run python -m lab.experiments.pair_lead --dsn DSN \\
        --corpus ../shared/eval/corpus_en.jsonl --corpus ../shared/eval/corpus_zh.jsonl

It times the probes-only call of the single form (revision 0024's, with its
last argument, the leading count; no keys: the second step of an add, the
probe part of a near()) for each (L, S), interleaved and rotated query by
query; (32, 32) is revision 0019's search. The queries are edited copies of
stored corpus texts (as bench scale asks) and new texts (lines of several
corpus texts, as bench day adds them). With ``--end-to-end``: ``near()``
and ``add()`` (rolled back) under the store's policy and under 0019's,
alternating per text.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from itertools import islice

import click

from lab.bench import day_texts
from lab.bench import text as bench_text
from simhash_pg import SimhashStore
from simhash_pg.bits import to_signed
from simhash_pg.store.sql import int_array
from simhash_pg.verify.candidates import text_and_vtext

_CALL = ("SELECT 1, * FROM simhash_near_probes_candidates(%s, %s::smallint[], %s::smallint[],"
         " %s::smallint[], %s::smallint[], %s, NULL, NULL, NULL, 22, true, %s)")
VARIANTS = ((32, 32), (12, 64), (16, 48), (8, 48))


@click.command()
@click.option("--dsn", required=True)
@click.option("--corpus", "corpus", multiple=True, required=True)
@click.option("--stored", default=3000, show_default=True,
              help="Corpus texts the bench store holds (bench scale's default).")
@click.option("--queries", default=300, show_default=True)
@click.option("--rounds", default=2, show_default=True)
@click.option("--end-to-end", is_flag=True,
              help="Instead: near() and add() (rolled back) under the store's policy and "
                   "under revision 0019's (32 values, every one leading), alternating per "
                   "text, on a store at revision 0024 or later.")
def main(dsn: str, corpus: tuple[str, ...], stored: int, queries: int, rounds: int,
         end_to_end: bool) -> None:
    real = bench_text.read_corpus(corpus, 1)
    bench_text._STORED[:], bench_text._HELD[:] = real[:stored], real[stored:]
    # new texts as bench day adds them: lines of several corpus texts (their keys
    # meet rows the rule rejects, so an add takes both steps); the held-back corpus
    # texts themselves are no use, since bench scale's adds store them
    sets = {"edited copies": bench_text.make_queries(1, [], queries),
            "new texts": list(islice(day_texts._texts(7, 0.0), queries))}
    if end_to_end:
        with SimhashStore(dsn, migrate=False) as store:
            for label, texts in sets.items():
                _end_to_end(store, label, texts, rounds)
        return
    with SimhashStore(dsn, migrate=False) as store:
        # the second list's depth: the policy's probes computed that deep
        policy = dataclasses.replace(store.policy, probe_pairs=max(s for _, s in VARIANTS))
        for label, texts in sets.items():
            _measure(store, policy, label, texts, rounds)


def _measure(store: SimhashStore, policy: object, label: str, texts: list[str],
             rounds: int) -> None:
    conn, cap = store.connection, max(store.k, store.policy.probe_cap)
    qargs = []
    for t in texts:
        fp, vt = text_and_vtext(store.fingerprinter, t, policy)  # type: ignore[arg-type]
        if vt is not None and vt.probes is not None and store.policy.probes_pairs(vt.text):
            qargs.append((to_signed(fp), vt.probes))
    ms: dict[tuple[int, int], list[float]] = {v: [] for v in VARIANTS}
    rows = dict.fromkeys(VARIANTS, 0)
    for r in range(rounds + 1):  # the first round warms
        for n, (fp, probes) in enumerate(qargs):
            for lead, second in VARIANTS[n % 4:] + VARIANTS[:n % 4]:
                args = [fp, *(int_array(p[:second]) for p in probes), cap, lead]
                t0 = time.perf_counter()
                got = conn.execute(_CALL, args, prepare=True).fetchall()
                if r:
                    ms[lead, second].append(time.perf_counter() - t0)
                    rows[lead, second] += len(got)
    base = statistics.median(ms[VARIANTS[0]])
    click.echo(f"{label}: {len(qargs)} pair-probed queries x {rounds} rounds")
    for v in VARIANTS:
        p50 = statistics.median(ms[v])
        click.echo(f"  leading {v[0]:>2}, second {v[1]:>2}: probes-only call p50 "
                   f"{p50 * 1000:.3f} ms ({p50 / base:.2f}x), rows within the cap "
                   f"{rows[v] / rounds:.0f}")


def _end_to_end(store: SimhashStore, label: str, texts: list[str], rounds: int) -> None:
    """near() and add() of each text under both policies, alternating, the add rolled
    back (its locks, look-ups and write, not its commit): the store is unchanged."""
    policies = {"0024 (leading 12 of 64)": store.policy,
                "0019 (32, all leading)": dataclasses.replace(
                    store.policy, probe_pairs=32, probe_lead=None)}
    near: dict[str, list[float]] = {p: [] for p in policies}
    add: dict[str, list[float]] = {p: [] for p in policies}
    differ = 0
    conn = store.connection
    names = list(policies)
    for r in range(rounds + 1):  # the first round warms
        for n, text in enumerate(texts):
            found = {}
            for name in names[n % 2:] + names[:n % 2]:
                store.policy = policies[name]
                t0 = time.perf_counter()
                got = store.near(text)
                t1 = time.perf_counter()
                with conn.transaction(force_rollback=True):
                    t2 = time.perf_counter()
                    res = store.add(text)
                    t3 = time.perf_counter()
                found[name] = (bool(got), res.inserted)
                if r:
                    near[name].append(t1 - t0)
                    add[name].append(t3 - t2)
            differ += r > 0 and len(set(found.values())) > 1
    store.policy = policies[names[0]]
    click.echo(f"{label}: {len(texts)} texts x {rounds} rounds, alternating")
    base_n, base_a = (statistics.median(near[names[1]]), statistics.median(add[names[1]]))
    for name in names:
        pn, pa = statistics.median(near[name]), statistics.median(add[name])
        click.echo(f"  {name}: near() p50 {pn * 1000:.2f} ms ({pn / base_n:.2f}x), p99 "
                   f"{_p99(near[name]) * 1000:.2f}; add() p50 {pa * 1000:.2f} ms "
                   f"({pa / base_a:.2f}x), p99 {_p99(add[name]) * 1000:.2f}")
    click.echo(f"  texts whose near() found / add() stored differed: {differ}")


def _p99(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, int(0.99 * len(xs)))]


if __name__ == "__main__":
    main()
