"""How few margin-ranked probe values per block the default needs, now that the keys exist.

The probes (``VerifyPolicy.probe_count``: at most ``PROBE_T`` = 11 values per
16-bit block, 10 for a long text beside its keys, each found row within
``PROBE_CAP`` = 13 bits) were sized before the keys (sentence signature and
hashes, min-hash keys, title keys) existed. A probed value walks ~N/65,536
index entries, so the probes' cost grows with the store while the keys' stays
flat. This measures the default store (``verify="all"``, k = 3, rule 2) at
fewer values per block (``probe_t`` = T, the cap on ``probe_count``) and, at
the best small T, at cap 11.

Run from the repository root:

    uv run python -m lab.experiments.probe_budget            # the model (~5 min)
    uv run python -m lab.experiments.probe_budget --store    # + the eval's pairs through a
                                                             #   throwaway store (~2 min more)
    uv run python -m lab.experiments.probe_budget --ts 11 7 9   # other T (the first: baseline)

Decisions come from ``lab.quality``'s model of the store (``Q.decide`` with
``Q.probe_hits`` at each T), the one ``simhash-pg eval`` holds equal to the
store's answers (``verified_disagree_with_rule``; tests/test_quality.py).
``--store`` also asks a real store: every text of ``../shared/eval`` added
under ``verify="all"``, then ``near_many`` at each setting (the store's
policy with ``probe_t``/``probe_cap`` replaced: stored rows do not depend on
them); its answers are the eval tables' figures and the ``store = model``
column counts the pairs where the two differ.

Sets, every pair in both directions:

- ``../shared/eval`` documents (``pairs.jsonl``) and titles
  (``pairs_short.jsonl``), as ``simhash-pg eval`` reports them;
- the generated noise kept apart: ``lab.noise`` (``KINDS``, and the
  held-out ``HELDOUT_KINDS``), ``lab.experiments.escaping``,
  ``scattered_edits`` and ``more_edits``, each at its own default seed,
  through ``lab.experiments.noise_eval.noise_pairset`` (the generators other
  than ``lab.noise`` read ``../shared/eval`` beside the repository).

What it found (``--store``; the store agreed with the model on every pair
at every setting): T = 8 is the smallest of 11, 8, 6, 5, 4, 3, 2, 1 that
keeps eval documents R >= 0.985 (0.9859 against 0.9875 at T = 11; 3707 vs
3713 of 3760, P 1.000), titles F1 >= 0.99 (0.9948, unchanged) and every
noise kind within 0.005 of T = 11 (no kind lost a pair): 32 probe values per
long query instead of 40. T = 6 gives documents R 0.9843; T = 7 (outside the
list) 0.9851, one pair above the bar. Cap 11 at T = 8: documents R 0.9843,
titles F1 0.9932. The noise sets alone would allow T = 2; the keys find
most duplicates there (probe alone: 0-7 per set, but 246 in escaping, 238
of them English title_escaped pairs, at every T). What the probes still find alone in the eval:
documents, only SPDX licence variants (real_license: 42 at T = 11, 36 at
T = 8, and the 6 pairs T = 8 loses are licences too); titles, one-character
edits and mined pairs (35 at T = 11 and T = 8).

Again under revision 0018 (a key with 17-256 holders finds the 16 nearest;
the model only, ``--ts 11 8 6 5``, 222 s): T = 11 and T = 8 give the same
figures everywhere (documents R 0.9928, P 1.0000; titles F1 0.9948; no noise
kind loses recall), T = 6 titles F1 0.9940 and garbled_3pct -0.0022, T = 5
titles 0.9932. The keys now find the licence pairs that T = 8 lost before,
so the default became T = 8 (``PROBE_T``): 32 probe values per long query
instead of 40.

"Found by" splits the duplicates found: by a key alone (the pair's keys meet,
``Q.signature_matches``, and no probe value reaches it within the cap), by a
probe alone, or by both.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lab import quality as Q
from lab.experiments import escaping, more_edits, scattered_edits
from lab.experiments.margin_probes import BoolA, table
from lab.experiments.noise_eval import noise_pairset
from lab.noise import HELDOUT_KINDS, KINDS, SEED, NoisePair, generate, generate_heldout
from simhash_pg import verify as V
from simhash_pg.text.schemes import Scheme
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify.jaccard import from_norm_sig

T_VALUES = (11, 8, 6, 5, 4, 3, 2, 1)
NARROW_CAP = 11  # the other cap, measured at the best small T
K = 3  # the store's k: under "all" every text query is probed (VerifyPolicy.probe_budget)
ROWS = 50_000_000  # a probed value walks ~ROWS / 65,536 index entries
# what the best small T must keep
MIN_DOC_RECALL = 0.985
MIN_DOC_PRECISION = 0.999
MIN_TITLE_F1 = 0.99
MAX_NOISE_LOSS = 0.005  # per noise kind, against T = 11


@dataclass(frozen=True)
class Setting:
    """Probe values per block (the cap on ``probe_count``) and the Hamming cap."""

    t: int
    cap: int = V.PROBE_CAP

    @property
    def name(self) -> str:
        return f"T={self.t}" + ("" if self.cap == V.PROBE_CAP else f" cap {self.cap}")

    @property
    def rule(self) -> Q.Rule:
        """The default store's rule at this setting, as ``simhash-pg eval`` models verify=all."""
        return Q.Rule(long_verify=True, sentences=True, probe_t=self.t, probe_cap=self.cap)


@dataclass
class Measured:
    """One pair set: the model's signals, probe hits per T, and decisions per setting."""

    title: str
    res: Q.SetResult
    kinds: tuple[str, ...]  # rows of the noise tables (empty: an eval set)
    keys: list[tuple[int, int | None, tuple[int, ...]]]  # per query: (text length, sig, hashes)
    hits: dict[int, BoolA] = field(default_factory=dict)
    store: dict[Setting, BoolA] = field(default_factory=dict)  # --store: the store's answers

    @property
    def ps(self) -> Q.PairSet:
        return self.res.pairs

    def model(self, s: Setting) -> BoolA:
        r = self.res
        return Q.decide(s.rule, r.distance, r.similarity, self.ps.short, r.sentences,
                        r.queries, self.hits[s.t])

    def decided(self, s: Setting) -> BoolA:
        """The store's answers where asked (``--store``), else the model's."""
        return self.store[s] if s in self.store else self.model(s)

    def found_by(self, s: Setting) -> tuple[int, int, int]:
        """Duplicates found by (a key alone, a probe alone, both)."""
        det = self.model(s)
        found = det & self.ps.duplicate
        key = self.res.sentences
        probe = self.hits[s.t] & (self.res.distance <= max(K, s.cap))
        assert not (det & ~key & ~probe).any(), "a probed query found a pair it never looked up"
        return (int((found & key & ~probe).sum()), int((found & probe & ~key).sum()),
                int((found & key & probe).sum()))

    def lookups(self, s: Setting) -> tuple[float, float]:
        """Mean probe values and mean look-ups (keys + probe values) per query text."""
        policy = s.rule.policy
        values = [4 * policy.probe_count(sig, hashes) for _, sig, hashes in self.keys]
        keys = [(sig is not None) + len(hashes) for _, sig, hashes in self.keys]
        return float(np.mean(values)), float(np.mean(values) + np.mean(keys))


def measure(title: str, ps: Q.PairSet, scheme: Any, ts: Sequence[int], kinds: Sequence[str],
            workers: int | None, log: Callable[[str], None]) -> Measured:
    """Every signal of ``ps`` the decisions need, probe hits at each of ``ts``."""
    log(f"{title}: {len(ps)} directed pairs, {len(ps.texts)} texts")
    res = Q.measure_set(ps, [scheme], peers=False, workers=workers)
    fp = Fingerprinter(scheme)
    keys = []
    for q in sorted(set(ps.a)):
        vt = from_norm_sig(fp.normalize(ps.texts[q]))  # what the store looks up
        keys.append((len(vt.text), vt.sig, vt.hashes))
    m = Measured(title, res, tuple(kinds), keys)
    for t in ts:
        m.hits[t] = res.probe_hit if t == V.PROBE_T else Q.probe_hits(ps, scheme, t, workers)
    return m


# ---------------------------------------------------------------- the sets


def eval_sets(eval_dir: Path, ts: Sequence[int], workers: int | None,
              log: Callable[[str], None]) -> list[Measured]:
    out = []
    for short, title in ((False, "../shared/eval documents"), (True, "../shared/eval titles")):
        ps = Q.load_pairs(eval_dir, short=short)
        out.append(measure(title, ps, None, ts, (), workers, log))
    return out


def noise_sets(eval_dir: Path, ts: Sequence[int], workers: int | None,
               log: Callable[[str], None]) -> list[Measured]:
    gens: list[tuple[str, tuple[str, ...], Callable[[], list[NoisePair]]]] = [
        (f"noise set (lab.noise.KINDS, seed {SEED})", KINDS,
         lambda: generate(eval_dir, 150, SEED)),
        (f"held-out kinds (lab.noise.HELDOUT_KINDS, seed {SEED})", HELDOUT_KINDS,
         lambda: generate_heldout(eval_dir, 150, SEED)),
        ("escaping (seed 11)", escaping.KINDS, lambda: escaping.generate(150, 11)),
        ("scattered_edits (seed 2026)", scattered_edits.KINDS,
         lambda: scattered_edits.generate(2026)),
        ("more_edits (seed 99)", more_edits.KINDS, lambda: more_edits.generate(99)),
    ]
    scheme = Scheme()  # the default scheme, as noise_eval's step_decisions
    return [measure(title, noise_pairset(gen(), scheme), scheme, ts, kinds, workers, log)
            for title, kinds, gen in gens]


# ---------------------------------------------------------------- the store


@contextmanager
def database(dsn: str | None) -> Iterator[str]:
    """``dsn``, or a throwaway server's database, destroyed afterwards."""
    if dsn is not None:
        yield dsn
        return
    from simhash_pg.db.server import LocalServer, sized_settings, temporary_home

    server = LocalServer(temporary_home("shpg-probe-budget-"), settings=sized_settings(small=True))
    try:
        yield server.start(dbname="probe_budget")
    finally:
        server.destroy()


def add_texts(st: Any, sets: Sequence[Measured], log: Callable[[str], None]) -> None:
    """Every text of ``sets`` into store ``st``, keyed by its eval id (``add_many``, no dedup)."""
    from simhash_pg.store import Doc

    texts: dict[str, str] = {}
    for m in sets:
        texts.update(m.ps.texts)
    log(f"store: add_many of {len(texts)} texts")
    st.add_many((Doc(texts[i], key=i) for i in sorted(texts)), dedup=False, batch_size=2000)


def ask_store(sets: Sequence[Measured], settings: Sequence[Setting], dsn: str | None,
              log: Callable[[str], None]) -> None:
    """The default store's own answers at each setting (``Measured.store``)."""
    from simhash_pg.store import SimhashStore

    with database(dsn) as target, SimhashStore(target, verify="all") as st:
        add_texts(st, sets, log)
        default = st.policy
        for s in settings:
            # a query's probes only: what a row stores does not depend on them
            st.policy = dataclasses.replace(default, probe_t=s.t, probe_cap=s.cap)
            log(f"store: near_many at {s.name}")
            for m, det in zip(sets, Q.store_decisions([m.ps for m in sets], st, K), strict=True):
                m.store[s] = det


# ---------------------------------------------------------------- tables


def eval_table(m: Measured, settings: Sequence[Setting]) -> str:
    ps = m.ps
    head = ["setting", "probe values / query", "look-ups / query",
            f"index entries walked @{ROWS // 1_000_000}M", "P / R / F1", "TP / FP / FN"]
    long_col = bool(ps.long.any())
    if long_col:
        head.append(">= 200 chars P / R")
    head.append("found by key only / probe only / both")
    if m.store:
        head.append("store = model (pairs differing)")
    rows = []
    for s in settings:
        det = m.decided(s)
        c = Q.counts(det, ps.duplicate)
        values, looks = m.lookups(s)
        row = [s.name, f"{values:.1f}", f"{looks:.1f}", f"{values * ROWS / 65536:,.0f}",
               f"{c.precision:.4f} / {c.recall:.4f} / {c.f1:.4f}", f"{c.tp} / {c.fp} / {c.fn}"]
        if long_col:
            lc = Q.counts(det[ps.long], ps.duplicate[ps.long])
            row.append(f"{lc.precision:.4f} / {lc.recall:.4f}")
        row.append(" / ".join(str(n) for n in m.found_by(s)))
        if m.store:
            row.append(str(int((m.store[s] != m.model(s)).sum())) if s in m.store else "-")
        rows.append(row)
    return table(head, rows)


def kind_recalls(m: Measured, s: Setting) -> dict[str, float]:
    """Recall per kind, both languages together (nan: no duplicate of the kind)."""
    det = m.decided(s)
    return {k: Q.counts(det[m.ps.kind == k], m.ps.duplicate[m.ps.kind == k]).recall
            for k in m.kinds}


def noise_table(m: Measured, settings: Sequence[Setting]) -> str:
    ps = m.ps
    dets = {s: m.decided(s) for s in settings}
    rows = []
    for k in m.kinds:
        sel = ps.kind == k
        dups = int(ps.duplicate[sel].sum())
        cells = []
        for s in settings:
            c = Q.counts(dets[s][sel], ps.duplicate[sel])
            cells.append(f"{c.recall:.3f}" if dups else f"FP {c.fp}/{c.fp + c.tn}")
        rows.append([k, f"{dups}/{int((~ps.duplicate[sel]).sum())}", *cells])
    every = Q.counts(dets[settings[0]], ps.duplicate)
    rows.append(["all: P / R", f"{every.tp + every.fn}/{every.fp + every.tn}",
                 *(f"{c.precision:.3f} / {c.recall:.3f}"
                   for c in (Q.counts(dets[s], ps.duplicate) for s in settings))])
    rows.append(["found by key only / probe only / both", "",
                 *(" / ".join(str(n) for n in m.found_by(s)) for s in settings)])
    rows.append(["probe values / query", "", *(f"{m.lookups(s)[0]:.1f}" for s in settings)])
    return table(["kind (R, both languages)", "dup/non (directed)", *(s.name for s in settings)],
                 rows)


# ---------------------------------------------------------------- the verdict


def verdict(evals: Sequence[Measured], noises: Sequence[Measured], settings: Sequence[Setting],
            base: Setting) -> tuple[str, Setting | None]:
    """Which settings keep the targets, and the smallest T among them."""
    docs, titles = evals
    base_recall = {(m.title, k): r for m in noises for k, r in kind_recalls(m, base).items()}
    rows = []
    passing = []
    for s in settings:
        dc = Q.counts(docs.decided(s), docs.ps.duplicate)
        tf = Q.counts(titles.decided(s), titles.ps.duplicate).f1
        losses = [(base_recall[m.title, k] - r, f"{m.title.split(' (')[0]}: {k}")
                  for m in noises for k, r in kind_recalls(m, s).items()
                  if r == r and base_recall[m.title, k] == base_recall[m.title, k]]
        loss, worst = max(losses)
        ok = (dc.recall >= MIN_DOC_RECALL and dc.precision >= MIN_DOC_PRECISION
              and tf >= MIN_TITLE_F1 and loss <= MAX_NOISE_LOSS + 1e-12)
        if ok:
            passing.append(s)
        rows.append([s.name, f"{dc.recall:.4f}", f"{dc.precision:.4f}", f"{tf:.4f}",
                     f"{loss:+.4f} ({worst})" if loss > 0 else f"{loss:+.4f}",
                     "yes" if ok else "no"])
    head = [f"setting (vs {base.name})", f"docs R >= {MIN_DOC_RECALL}",
            f"docs P >= {MIN_DOC_PRECISION}", f"titles F1 >= {MIN_TITLE_F1}",
            f"largest noise-kind recall loss <= {MAX_NOISE_LOSS} (kind)", "keeps all"]
    best = min((s for s in passing if s.cap == base.cap), key=lambda s: s.t, default=None)
    return table(head, rows), best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--eval-dir", type=Path, default=None)
    ap.add_argument("--ts", type=int, nargs="+", default=list(T_VALUES),
                    help="probe values per block to measure (the first is the baseline)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--store", action="store_true",
                    help="also ask a store (a throwaway server unless --dsn) for the eval sets")
    ap.add_argument("--dsn", default=None, help="an empty database for --store")
    args = ap.parse_args()
    eval_dir = Q.resolve_eval_dir(args.eval_dir)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:5.0f} s] {msg}", flush=True)

    evals = eval_sets(eval_dir, args.ts, args.workers, log)
    noises = noise_sets(eval_dir, args.ts, args.workers, log)
    settings = [Setting(t) for t in args.ts]
    _, best = verdict(evals, noises, settings, settings[0])
    if best is not None and best.cap != NARROW_CAP:
        settings.append(Setting(best.t, NARROW_CAP))
    if args.store:
        ask_store(evals, settings, args.dsn, log)
    report, best = verdict(evals, noises, settings, settings[0])
    print()
    for m in evals:
        print(f"## {m.title}: {len(m.ps)} directed pairs, {int(m.ps.duplicate.sum())} "
              f"duplicates ({'the store' if m.store else 'the model of the store'})\n")
        print(eval_table(m, settings), "\n")
    for m in noises:
        print(f"## {m.title}: {len(m.ps)} directed pairs (the model of the store)\n")
        print(noise_table(m, settings), "\n")
    print("## Verdict\n")
    print(report, "\n")
    print(f"smallest T that keeps every target: {best.name if best else 'none'}")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
