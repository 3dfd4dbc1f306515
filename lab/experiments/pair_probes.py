"""Probing pairs of blocks: can a text query walk fewer index entries at the same recall?

Today a probed text query (``verify="all"``) asks, per 16-bit block ``b_i``, for
every row whose block value is one of the query's ``T`` margin-ranked probe
values (``simhash_pg.probes``), and Hamming-checks each such row inside the
index-only scan: ~N / 65,536 entries per value (763 at 50M rows), each paying
the visibility-map check and the filter (docs/scaling.md, "Text queries at
scale"). Block ``i``'s index is ``(b_i, b_(i+1), fingerprint)``, so a probe
can also be a *pair*: ``b_i = ANY(P_i) AND b_(i+1) = ANY(P_(i+1))``. The btree
then drops the entries whose ``b_(i+1)`` is not probed before they reach the
visibility map, and only ~T^2 N / 2^32 rows per block come back.

The pair predicate is narrower than the single one at the same ``T`` (a row
must meet two blocks' probe sets), so it needs a larger ``T``; this measures,
in the model of the store that ``simhash-pg eval`` keeps equal to the store
(``lab.quality``), the eval's documents and titles and the noise sets at:

- ``single T``: today's predicate (``T`` = 11 is today's, trimmed beside keys);
- ``pair T``: some cyclic ``i`` with ``b_i`` in ``P_i`` and ``b_(i+1)`` in ``P_(i+1)``;
- ``single T1 + pair T2``: either.

Run from the repository root (~5 min)::

    uv run python -m lab.experiments.pair_probes
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab import quality as Q
from lab.experiments.margin_probes import BoolA, table
from lab.experiments.probe_budget import Measured, Setting, eval_sets, noise_sets
from simhash_pg import verify as V
from simhash_pg.bits import blocks_array
from simhash_pg.text.schemes import Scheme
from simhash_pg.text.simhash import Fingerprinter

ROWS = 50_000_000
PER_VALUE = ROWS / 65536  # index entries under one 16-bit block value
T_MAX = 64


@dataclass(frozen=True)
class Variant:
    single: int  # probe values per block matched alone (0: none)
    pair: int  # probe values per block in the pair predicate (0: none)

    @property
    def name(self) -> str:
        parts = ([f"single {self.single}"] if self.single else []) + (
            [f"pair {self.pair}"] if self.pair else [])
        return " + ".join(parts)

    def entries(self) -> tuple[float, float]:
        """Index entries per query at ROWS: (checked by the filter, dropped by the btree)."""
        filtered = 4 * self.single * PER_VALUE + 4 * self.pair ** 2 * ROWS / 2 ** 32
        return filtered, 4 * self.pair * PER_VALUE


def probe_table(m: Measured, scheme: Scheme | None, workers: int | None) -> tuple[dict, dict]:
    """Every text's fingerprint blocks and its T_MAX ranked probe values per block."""
    fper = Fingerprinter(scheme)
    ids = sorted(m.ps.texts)
    got = fper.fingerprint_many_probes([m.ps.texts[i] for i in ids], V.alnum_only, T_MAX, workers)
    blocks = {i: (None if fp is None else [int(v) for v in blocks_array([fp])[0]])
              for i, (fp, _, _) in zip(ids, got, strict=True)}
    probes = {i: pr for i, (_, _, pr) in zip(ids, got, strict=True)}
    return blocks, probes


def hits(m: Measured, blocks: dict, probes: dict, v: Variant) -> BoolA:
    out = np.zeros(len(m.ps), dtype=bool)
    for n, (a, b) in enumerate(zip(m.ps.a, m.ps.b, strict=True)):
        pa, bb = probes[a], blocks[b]
        if pa is None or bb is None:
            continue
        single = [set(p[: v.single]) for p in pa]
        pair = [set(p[: v.pair]) for p in pa]
        out[n] = any(bb[i] in single[i] for i in range(4)) or any(
            bb[i] in pair[i] and bb[(i + 1) % 4] in pair[(i + 1) % 4] for i in range(4))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--eval-dir", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    eval_dir = Q.resolve_eval_dir(args.eval_dir)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:5.0f} s] {msg}", flush=True)

    base = Setting(V.PROBE_T)
    variants = [Variant(s, p) for s, p in (
        (11, 0), (0, 11), (0, 16), (0, 24), (0, 32), (0, 48), (0, 64),
        (1, 24), (1, 32), (1, 48), (2, 32), (2, 48), (3, 32), (4, 32), (4, 48))]
    sets: list[Measured] = [*eval_sets(eval_dir, [base.t], args.workers, log),
                            *noise_sets(eval_dir, [base.t], args.workers, log)]
    rows = []
    results: dict[tuple[str, Variant], BoolA] = {}
    for m in sets:
        log(f"probes of {m.title}")
        scheme = Scheme() if m.kinds else None  # as probe_budget's sets were measured
        blocks, probes = probe_table(m, scheme, args.workers)
        for v in variants:
            h = hits(m, blocks, probes, v)
            r = m.res
            results[m.title, v] = Q.decide(base.rule, r.distance, r.similarity, m.ps.short,
                                           r.sentences, r.queries, h)
    today = {m.title: m.model(base) for m in sets}
    docs, titles = sets[0], sets[1]
    for v in variants:
        dc = Q.counts(results[docs.title, v], docs.ps.duplicate)
        tc = Q.counts(results[titles.title, v], titles.ps.duplicate)
        worst = (0.0, "")
        for m in sets[2:]:
            for k in m.kinds:
                sel = m.ps.kind == k
                if not m.ps.duplicate[sel].any():
                    continue
                was = Q.counts(today[m.title][sel], m.ps.duplicate[sel]).recall
                now = Q.counts(results[m.title, v][sel], m.ps.duplicate[sel]).recall
                worst = max(worst, (was - now, f"{m.title.split(' (')[0]}: {k}"))
        filt, dropped = v.entries()
        rows.append([v.name, f"{filt:,.0f}", f"{dropped:,.0f}",
                     f"{dc.precision:.4f} / {dc.recall:.4f}", f"{tc.f1:.4f}",
                     f"{worst[0]:+.4f} {worst[1]}"])
    dt = Q.counts(today[docs.title], docs.ps.duplicate)
    print(f"\ntoday (single 11, trimmed beside keys): docs P / R {dt.precision:.4f} / "
          f"{dt.recall:.4f}, titles F1 "
          f"{Q.counts(today[titles.title], titles.ps.duplicate).f1:.4f}\n")
    print(table(["variant", f"entries filtered @{ROWS // 10**6}M",
                 "entries dropped in the btree", "docs P / R", "titles F1",
                 "largest noise-kind recall loss vs today"], rows))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
