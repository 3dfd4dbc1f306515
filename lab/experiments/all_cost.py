"""Where a verified text ``near()`` spends its time, part by part, on one store.

A text look-up under ``verify="all"`` is three parts in the client and one
call in the server: the analysis (normalise, fingerprint, probe values,
keys), the candidates call, and the rule's filter. This times each part of
the same queries, and the candidates call again with only its probes and
with only its keys, so that a change to one part is measured where it acts:

    uv run python -m lab.experiments.all_cost --dsn DSN \\
        --corpus ../shared/eval/corpus_en.jsonl --corpus ../shared/eval/corpus_zh.jsonl

The corpus texts are the queries (each also stored in a bench store, so
most find themselves).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import click

from lab.bench.text import read_corpus
from simhash_pg import SimhashStore
from simhash_pg.bits import to_signed
from simhash_pg.store import lookup as lookup_mod
from simhash_pg.store.sql import int_array
from simhash_pg.text.signatures import MINHASH_CAP
from simhash_pg.verify.candidates import text_and_vtext


@click.command()
@click.option("--dsn", required=True)
@click.option("--corpus", "corpus", multiple=True, required=True)
@click.option("--queries", default=300, show_default=True)
@click.option("--rounds", default=2, show_default=True)
@click.option("--seed", default=1, show_default=True)
def main(dsn: str, corpus: tuple[str, ...], queries: int, rounds: int, seed: int) -> None:
    texts = read_corpus(corpus, seed)[:queries]
    parts: dict[str, list[float]] = {p: [] for p in (
        "analysis", "candidates call", "probes only", "keys only", "neither", "filter",
        "near() end to end")}
    with SimhashStore(dsn, migrate=False) as store:
        conn, policy, k = store.connection, store.policy, store.k
        click.echo(f"store verify={store.verify}, k={k}; {len(texts)} queries x {rounds} rounds")
        for _ in range(rounds):
            for text in texts:
                t0 = time.perf_counter()
                fp, vt = text_and_vtext(store.fingerprinter, text, policy)
                t1 = time.perf_counter()
                args = _args(to_signed(fp), vt, k, policy)
                if args is None:
                    continue
                rows = conn.execute(lookup_mod._PROBES_ONE, args, prepare=True).fetchall()
                t2 = time.perf_counter()
                lookup_mod.lookup(conn, [to_signed(fp)], [vt], k, policy)
                t3 = time.perf_counter()
                no_keys = [*args[:7], None, None, *args[9:]]
                conn.execute(lookup_mod._PROBES_ONE, no_keys, prepare=True).fetchall()
                t4 = time.perf_counter()
                no_probes = [args[0], "{}", "{}", "{}", "{}", *args[5:]]
                conn.execute(lookup_mod._PROBES_ONE, no_probes, prepare=True).fetchall()
                t5 = time.perf_counter()
                neither = [args[0], "{}", "{}", "{}", "{}", args[5], None, None, None,
                           *args[9:]]
                conn.execute(lookup_mod._PROBES_ONE, neither, prepare=True).fetchall()
                t5b = time.perf_counter()
                store.near(text)
                t6 = time.perf_counter()
                parts["analysis"].append(t1 - t0)
                parts["candidates call"].append(t2 - t1)
                # lookup() = the same call again + the filter
                parts["filter"].append(max(0.0, (t3 - t2) - (t2 - t1)))
                parts["probes only"].append(t4 - t3)
                parts["keys only"].append(t5 - t4)
                parts["neither"].append(t5b - t5)
                parts["near() end to end"].append(t6 - t5b)
                del rows
    click.echo(f"{'part':<22}{'p50 ms':>9}{'mean ms':>9}{'p90 ms':>9}")
    for name, v in parts.items():
        v = [x * 1000 for x in v]
        click.echo(f"{name:<22}{statistics.median(v):>9.3f}{statistics.fmean(v):>9.3f}"
                   f"{statistics.quantiles(v, n=10)[8]:>9.3f}")


def _args(fp: int, vt: Any, k: int, policy: Any) -> list[Any] | None:
    """The single form's arguments, as lookup() builds them (None: not a probed query)."""
    if policy.probe_budget(vt.text, k) is None or vt.probes is None:
        return None
    hashes, minhash = lookup_mod._keys(vt)
    ia = int_array
    return [fp, *map(ia, vt.probes), max(k, policy.probe_cap), vt.sig,
            ia(hashes) if hashes else None, ia(minhash) if minhash else None, MINHASH_CAP,
            policy.probes_pairs(vt.text), policy.probe_lead]


if __name__ == "__main__":
    main()
