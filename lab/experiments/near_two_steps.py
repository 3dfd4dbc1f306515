"""``near()`` in two steps, as an add looks up: what would it cost in recall?

Under ``verify="all"`` a long text's ``near()`` runs its keys and its probes in
one call; the probes are most of its cost at scale (docs/scaling.md, "Text
queries at scale"). An add already looks up in two steps
(``simhash_pg.store.lookup.lookup_for_add``): its keys and own block values
first, the probes only if those find no row the rule accepts. ``near()`` does
not, because it promises every row, and a row that only a probe reaches (a
garbled copy, say) would be lost whenever a key finds another.

This measures that loss where it can show: in one store holding every text of
the eval's documents and titles and of the noise sets (so a text meets the
other versions of its article), each pair's ``a`` asked both ways, and ``b``
looked for among the answers. A stored text finds its own row in the first
step, and would then never probe; the variant sets the query's own row aside
when it decides whether to probe (as a new text's query has no own row). It
also counts how many queries would still need the second call::

    uv run python -m lab.experiments.near_two_steps  # ~5 min, a throwaway server

Prints, per set: today's P / R, the two-step P / R, the duplicates lost, and
the share of queries that probe.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from lab import quality as Q
from lab.experiments.probe_budget import Measured, database, eval_sets, noise_sets
from simhash_pg import verify as V
from simhash_pg.bits import to_signed
from simhash_pg.store import lookup as L
from simhash_pg.verify.candidates import Candidate, text_and_vtext

CHUNK = 200  # queries a round trip, as near_many's batches


def _answers(st: Any, queries: Sequence[str], texts: dict[str, str], prefix: str
             ) -> tuple[list[set[str]], list[set[str]], int]:
    """Per query: the keys ``near()`` returns today, the keys the two-step form would,
    and how many queries the two-step form probes (keys: ``prefix`` + the set's ids)."""
    conn, policy, k = st.connection, st.policy, st.k
    today: list[set[str]] = []
    two: list[set[str]] = []
    probed = 0
    for start in range(0, len(queries), CHUNK):
        chunk = queries[start:start + CHUNK]
        fps, vts = [], []
        for q in chunk:
            fp, vt = text_and_vtext(st.fingerprinter, texts[q], policy)
            fps.append(to_signed(fp))
            vts.append(vt)
        whole = L.lookup(conn, fps, vts, k, policy)
        steps = [policy.adds_in_two_steps(vt.text, k) for vt in vts]
        first_vts = [vt._replace(probes=L.OWN_ONLY) if s else vt
                     for vt, s in zip(vts, steps, strict=True)]
        first = L.lookup(conn, fps, first_vts, k, policy)
        need = [i for i, s in enumerate(steps)
                if s and not [c for c in first[i] if str(c.key) != prefix + chunk[i]]]
        second: dict[int, list[Candidate]] = {}
        if need:
            rows = L._rows(conn, [fps[i] for i in need], [vts[i] for i in need], k, policy,
                           keys=False)
            for i, r in zip(need, rows, strict=True):
                second[i] = L._accepted(vts[i], r, k, policy)
        probed += sum(1 for i, s in enumerate(steps) if not s or i in second)
        for i in range(len(chunk)):
            today.append({str(c.key) for c in whole[i]})
            two.append({str(c.key) for c in first[i]} | {str(c.key) for c in second.get(i, [])})
    return today, two, probed


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", default=None)
    ap.add_argument("--dsn", default=None, help="a scratch database (default: a throwaway server)")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:6.1f}s] {msg}", flush=True)

    eval_dir = Q.resolve_eval_dir(args.eval_dir)
    sets: list[Measured] = [*eval_sets(eval_dir, [V.PROBE_T], args.workers, log),
                            *noise_sets(eval_dir, [V.PROBE_T], args.workers, log)]
    from simhash_pg.store import Doc, SimhashStore

    rows = []
    with database(args.dsn) as target, SimhashStore(target, verify="all") as st:
        # each set's ids under a prefix of its own: the noise sets all number theirs 0a, 0b, ...
        docs = [Doc(text, key=f"{j}/{i}") for j, m in enumerate(sets)
                for i, text in sorted(m.ps.texts.items())]
        log(f"store: add_many of {len(docs)} texts")
        st.add_many(docs, dedup=False, batch_size=2000)
        for j, m in enumerate(sets):
            ps, prefix = m.ps, f"{j}/"
            queries = sorted(set(ps.a))
            log(f"{m.title}: {len(queries)} queries")
            today, two, probed = _answers(st, queries, ps.texts, prefix)
            at = dict(zip(queries, range(len(queries)), strict=True))
            det_today = np.array([prefix + b in today[at[a]]
                                  for a, b in zip(ps.a, ps.b, strict=True)])
            det_two = np.array([prefix + b in two[at[a]]
                                for a, b in zip(ps.a, ps.b, strict=True)])
            c1, c2 = Q.counts(det_today, ps.duplicate), Q.counts(det_two, ps.duplicate)
            lost = det_today & ~det_two & ps.duplicate
            kinds = sorted({str(x) for x in ps.kind[lost]})
            rows.append((m.title, f"{c1.precision:.4f} / {c1.recall:.4f}",
                         f"{c2.precision:.4f} / {c2.recall:.4f}", str(int(lost.sum())),
                         ", ".join(kinds) or "-", f"{probed / len(queries):.0%}"))
    head = ("set", "today P / R", "two steps P / R", "duplicates lost", "kinds lost",
            "queries that probe")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
