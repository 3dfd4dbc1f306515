"""An add's look-up in two steps against the whole look-up, side by side on one store.

A verified add of a long text first asks its keys and its own block values,
and probes only if the rule accepts none of the rows they find
(``VerifyPolicy.adds_in_two_steps``; ``simhash_pg.store.lookup.lookup_for_add``).
This times both look-ups of the same texts, alternating per text, on a
``bench scale`` store (read only: nothing is added):

    uv run python -m lab.experiments.add_two_steps --dsn DSN \\
        --corpus ../shared/eval/corpus_en.jsonl --corpus ../shared/eval/corpus_zh.jsonl

The texts are what ``bench scale`` adds, the corpus texts it held back (most
are versions of a stored text), and two kinds of new text: words drawn at
random from the corpus (nothing meets them), and lines drawn from several
corpus texts (their keys meet rows the rule then rejects, so both steps
run). It checks that both look-ups find a duplicate for the same texts.
"""

from __future__ import annotations

import random
import statistics
import time

import click

from lab.bench.text import read_corpus
from simhash_pg import SimhashStore
from simhash_pg.bits import to_signed
from simhash_pg.store.lookup import lookup, lookup_for_add
from simhash_pg.verify.candidates import text_and_vtext


@click.command()
@click.option("--dsn", required=True)
@click.option("--corpus", "corpus", multiple=True, required=True)
@click.option("--stored", default=3000, show_default=True,
              help="Corpus texts the bench store holds (bench scale's default).")
@click.option("--queries", default=400, show_default=True)
@click.option("--rounds", default=2, show_default=True)
@click.option("--seed", default=1, show_default=True)
def main(dsn: str, corpus: tuple[str, ...], stored: int, queries: int, rounds: int,
         seed: int) -> None:
    real = read_corpus(corpus, seed)
    rnd = random.Random(seed)
    held = real[stored:stored + queries]
    words = " ".join(real[:stored]).split()
    lines = [line for t in real[:stored] for line in t.splitlines() if len(line) > 40]
    fresh = [" ".join(rnd.choices(words, k=len(t.split()))) for t in held[: queries // 4]]
    mixed = ["\n".join(rnd.choices(lines, k=max(2, t.count("\n") + 1)))
             for t in held[: queries // 4]]
    with SimhashStore(dsn, migrate=False) as store:
        conn, policy, k = store.connection, store.policy, store.k
        analysed = [(label, *text_and_vtext(store.fingerprinter, t, policy))
                    for label, group in (("held back", held), ("random words", fresh),
                                          ("mixed lines", mixed)) for t in group]
        times: dict[tuple[str, str], list[float]] = {}
        found: dict[tuple[str, str], int] = {}
        answers: dict[tuple[int, str], bool] = {}
        for r in range(rounds):
            for j, (label, fp, vt) in enumerate(analysed):
                first = r % 2 == 0
                for how in (("whole", "two steps") if first else ("two steps", "whole")):
                    t0 = time.perf_counter()
                    if how == "whole":
                        got = bool(lookup(conn, [to_signed(fp)], [vt], k, policy)[0])
                    else:
                        got = bool(lookup_for_add(conn, [to_signed(fp)], [vt], k,
                                                  policy)[0].found)
                    times.setdefault((label, how), []).append(time.perf_counter() - t0)
                    if r == 0:
                        found[(label, how)] = found.get((label, how), 0) + got
                        answers[(j, how)] = got
        disagree = sum(answers[(j, "whole")] != answers[(j, "two steps")]
                       for j in range(len(analysed)))
    click.echo(f"store verify={store.verify}; {len(held)} held-back texts, {len(fresh)} of "
               f"random words, {len(mixed)} of mixed lines; {rounds} rounds, alternating")
    click.echo(f"{'texts':<14}{'look-up':<11}{'p50 ms':>8}{'p90 ms':>8}{'found':>8}")
    for label in ("held back", "random words", "mixed lines"):
        for how in ("whole", "two steps"):
            v = [x * 1000 for x in times[(label, how)]]
            click.echo(f"{label:<14}{how:<11}{statistics.median(v):>8.3f}"
                       f"{statistics.quantiles(v, n=10)[8]:>8.3f}{found[(label, how)]:>8}")
        a, b = (statistics.median(times[(label, h)]) for h in ("two steps", "whole"))
        click.echo(f"{label:<14}two steps / whole p50: {a / b:.3f}x")
    click.echo(f"texts whose 'found a duplicate' differed: {disagree}")


if __name__ == "__main__":
    main()
