"""Probing pairs of blocks: can a text query walk fewer index entries at the same recall?

Today a probed text query (``verify="all"``) asks, per 16-bit block ``b_i``, for
every row whose block value is one of the query's ``T`` margin-ranked probe
values (``simhash_pg.text.probes``), and Hamming-checks each such row inside the
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
- ``pair S ... leading L``: pairs whose block ``i`` takes only the first ``L`` values
  (the btree reads the pages under each of those) and block ``i+1`` all ``S``.

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
from simhash_pg.bits import BLOCK_OFFSET, blocks_array
from simhash_pg.text.schemes import Scheme
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify.jaccard import TITLE_KEY_TEXT_CHARS

ROWS = 50_000_000
PER_VALUE = ROWS / 65536  # index entries under one 16-bit block value
T_MAX = 64


@dataclass(frozen=True)
class Variant:
    single: int  # probe values per block matched alone (0: none)
    pair: int  # probe values per block in the pair predicate (0: none)
    # pairs also pair the own value with its flips of up to this many bits (1: exact at k <= 3)
    flips: int = 0
    # > 0: a text with title keys (verification text under TITLE_KEY_TEXT_CHARS)
    # probes this many single values per block instead
    titles_single: int = 0
    # > 0: a pair's leading block takes only this many of the pair values (the
    # second block keeps all of them): the btree reads the pages under each
    # leading value, so this sets a pair scan's page count
    lead: int = 0

    @property
    def name(self) -> str:
        parts = ([f"single {self.single}"] if self.single else []) + (
            [f"pair {self.pair}"] if self.pair or self.flips else []) + (
            [f"+ {self.flips}-bit flips"] if self.flips else []) + (
            [f"(titles: single {self.titles_single})"] if self.titles_single else []) + (
            [f"leading {self.lead}"] if self.lead else [])
        return " + ".join(parts)

    def entries(self) -> tuple[float, float]:
        """Index entries per query at ROWS: (checked by the filter, dropped by the btree)."""
        lead = self.lead or self.pair
        filtered = 4 * self.single * PER_VALUE + 4 * lead * self.pair * ROWS / 2 ** 32
        return filtered, 4 * lead * PER_VALUE


def probe_table(m: Measured, scheme: Scheme | None, workers: int | None) -> tuple[dict, dict, set]:
    """Every text's fingerprint blocks and its T_MAX ranked probe values per block."""
    fper = Fingerprinter(scheme)
    ids = sorted(m.ps.texts)
    got = fper.fingerprint_many_probes([m.ps.texts[i] for i in ids], V.alnum_only, T_MAX, workers)
    blocks = {i: (None if fp is None else [int(v) for v in blocks_array([fp])[0]])
              for i, (fp, _, _) in zip(ids, got, strict=True)}
    probes = {i: pr for i, (_, _, pr) in zip(ids, got, strict=True)}
    titles = {i for i, (_, vt, _) in zip(ids, got, strict=True)
              if vt is not None and len(vt) < TITLE_KEY_TEXT_CHARS}
    return blocks, probes, titles


_MASKS = {r: [m for m in range(1 << 16) if 0 < m.bit_count() <= r] for r in (1, 2)}


def hits(m: Measured, blocks: dict, probes: dict, v: Variant, titles: set) -> BoolA:
    out = np.zeros(len(m.ps), dtype=bool)
    for n, (a, b) in enumerate(zip(m.ps.a, m.ps.b, strict=True)):
        pa, bb = probes[a], blocks[b]
        if pa is None or bb is None:
            continue
        if v.titles_single and a in titles:
            out[n] = any(bb[i] in set(pa[i][: v.titles_single]) for i in range(4))
            continue
        single = [set(p[: v.single]) for p in pa]
        second = [set(p[: v.pair]) for p in pa]
        pair = [set(p[: v.lead or v.pair]) for p in pa]
        if v.flips:  # the own value leads each pair, its 16 one-bit flips join the second
            own = [p[0] for p in pa]
            pair = [s | {o} for s, o in zip(pair, own, strict=True)]
            masks = _MASKS[v.flips]
            second = [s | {o} | {((o + BLOCK_OFFSET) ^ m) - BLOCK_OFFSET for m in masks}
                      for s, o in zip(second, own, strict=True)]
        out[n] = any(bb[i] in single[i] for i in range(4)) or any(
            bb[i] in pair[i] and bb[(i + 1) % 4] in second[(i + 1) % 4] for i in range(4))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--eval-dir", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--variants", default=None,
                    help="single:pair,... (e.g. 8:0,0:16); default: the list in main()")
    args = ap.parse_args()
    eval_dir = Q.resolve_eval_dir(args.eval_dir)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:5.0f} s] {msg}", flush=True)

    base = Setting(V.PROBE_T)
    variants = [Variant(s, p) for s, p in (
        (11, 0), (0, 11), (0, 16), (0, 24), (0, 32), (0, 48), (0, 64),
        (1, 24), (1, 32), (1, 48), (2, 32), (2, 48), (3, 32), (4, 32), (4, 48))]
    if args.variants:
        # single:pair, or single:pair:f for pairs with the own value's one-bit flips
        # single:pair, single:pair:f for pairs with the own value's one-bit
        # flips (f2: up to two bits), single:pair:f:T for titles probing T
        # single values instead, single:pair:f:T:L for pairs led by L values only
        variants = []
        for v in args.variants.split(","):
            f = v.split(":")
            variants.append(Variant(int(f[0]), int(f[1]),
                                    int(f[2][1:] or 1) if len(f) >= 3 else 0,
                                    int(f[3]) if len(f) >= 4 else 0,
                                    int(f[4]) if len(f) == 5 else 0))
    sets: list[Measured] = [*eval_sets(eval_dir, [base.t], args.workers, log),
                            *noise_sets(eval_dir, [base.t], args.workers, log)]
    rows = []
    results: dict[tuple[str, Variant], BoolA] = {}
    for m in sets:
        log(f"probes of {m.title}")
        scheme = Scheme() if m.kinds else None  # as probe_budget's sets were measured
        blocks, probes, title_ids = probe_table(m, scheme, args.workers)
        for v in variants:
            h = hits(m, blocks, probes, v, title_ids)
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
                # against the first variant (the model's own default moves with
                # the store's: since revision 0019 it probes pairs)
                was = Q.counts(results[m.title, variants[0]][sel], m.ps.duplicate[sel]).recall
                now = Q.counts(results[m.title, v][sel], m.ps.duplicate[sel]).recall
                worst = max(worst, (was - now, f"{m.title.split(' (')[0]}: {k}"))
        filt, dropped = v.entries()
        rows.append([v.name, f"{filt:,.0f}", f"{dropped:,.0f}",
                     f"{dc.precision:.4f} / {dc.recall:.4f}", f"{tc.f1:.4f}",
                     f"{worst[0]:+.4f} {worst[1]}"])
    dt = Q.counts(today[docs.title], docs.ps.duplicate)
    print(f"\ntoday (single {V.PROBE_T}, trimmed beside keys): docs P / R {dt.precision:.4f} / "
          f"{dt.recall:.4f}, titles F1 "
          f"{Q.counts(today[titles.title], titles.ps.duplicate).f1:.4f}\n")
    print(table(["variant", f"entries filtered @{ROWS // 10**6}M",
                 "entries dropped in the btree", "docs P / R", "titles F1",
                 "largest noise-kind recall loss vs the first variant"], rows))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
