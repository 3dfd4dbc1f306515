"""Real-world noise (issue 14, item 5): today's default and the fixes, offline.

Run from the repository root (figures in ``lab/experiments/margin_probes.md``):

    uv run python -m lab.experiments.noise_eval noise [--per-kind 150] [--seed S]
    uv run python -m lab.experiments.noise_eval eval      # the same configurations on
                                                          # ../shared/eval (no regressions?)
    uv run python -m lab.experiments.noise_eval default [--seeds 20250614 7]
        # the store's default at each step of issue 14's noise fixes, on the noise
        # set and on the held-out kinds (lab.noise.HELDOUT_KINDS), per seed

(``--eval-dir ../shared/eval`` when the repository is not beside ``shared``.)

Pairs come from :func:`lab.noise.generate` (built at run time, never stored),
labelled by the eval set's rule. Each configuration is a pipeline, offline:

- normalisation: scheme version 1's ("v1", markup is text), the visible text
  (:func:`simhash_pg.text.normalize.normalize_visible`: well-formed tags stripped,
  entities decoded; the default scheme from version 2 on), or the scheme option
  ``html=true``;
- candidates: radius 11 (today's ``verify="all"``) or margin-ranked probes
  (T per block, Hamming cap), each OR the 3-sentence signature;
- verification: today's Jaccard (:func:`simhash_pg.verify.accept`'s thresholds)
  or :func:`simhash_pg.verify.overlap.overlap` >= 0.8 (the labelling rule).

Every pair counts in both directions.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lab import quality as Q
from lab.experiments.margin_probes import (
    BoolA,
    Directed,
    Texts,
    compute_texts,
    directed,
    found,
    probe_lists,
    squared,
    table,
)
from lab.noise import KINDS, SEED, NoisePair, generate
from simhash_pg import verify as V
from simhash_pg.text.normalize import normalize_visible
from simhash_pg.text.schemes import Scheme
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify.overlap import OVERLAP_THRESHOLD

NORMALISERS: dict[str, Callable[[str], str] | None] = {
    "v1": Fingerprinter(Scheme(version=1)).normalize,  # scheme version 1: markup is text
    "visible": normalize_visible,
    "html=true": Fingerprinter(Scheme(html=True)).normalize,
}


@dataclass(frozen=True)
class Config:
    norm: str
    probes: bool  # else radius 11
    verify: str  # "jaccard" | "overlap"

    @property
    def name(self) -> str:
        cand = "probes" if self.probes else "radius 11"
        return f"{self.norm}, {cand}, {self.verify}"


TODAY = Config("v1", False, "jaccard")


def detect(d: Directed, t: Texts, cfg: Config, t_block: int, cap: int,
           ranks: dict[int, np.ndarray]) -> BoolA:
    if cfg.probes:
        key = id(t)
        if key not in ranks:
            ranks[key] = d.ranks(t, probe_lists(t, squared, tmax=t_block))
        cand = found(d, ranks[key], np.full((len(t.ids), 4), t_block), cap)
    else:
        cand = (d.dist <= V.LONG_K) | d.sig
        # signatures count for long pairs only (VerifyPolicy.accept)
        short = np.array([V.is_short(t.vtext[q]) or V.is_short(t.vtext[c])
                          for q, c in zip(d.q.tolist(), d.c.tolist(), strict=True)])
        cand = np.where(short, d.dist <= max(3, V.SHORT_K), cand)
    ok = d.sim >= d.thr if cfg.verify == "jaccard" else d.ovl >= OVERLAP_THRESHOLD
    return cand & ok


def check_today(d: Directed, t: Texts, det: BoolA) -> None:
    """The offline model of today's default must be verify.accept itself."""
    policy = V.policy_for("all")
    ref = np.array([
        policy.accept(t.vtext[q], [(t.vtext[c], int(dist), bool(sig))], 3)[0]
        for q, c, dist, sig in zip(d.q.tolist(), d.c.tolist(), d.dist, d.sig, strict=True)
    ])
    assert (ref == det).all(), f"{int((ref != det).sum())} pairs differ from VerifyPolicy.accept"


def prf(det: BoolA, dup: BoolA) -> str:
    c = Q.counts(det, dup)
    if c.tp + c.fn == 0:
        return f"FP {c.fp}/{c.fp + c.tn}"
    p = "-" if c.tp + c.fp == 0 else f"{c.precision:.3f}"
    return f"{p} / {c.recall:.3f}"


def noise_pairs(eval_dir: Path, per_kind: int, seed: int) -> tuple[list[NoisePair], dict[str, str]]:
    pairs = generate(eval_dir, per_kind, seed)
    texts: dict[str, str] = {}
    for k, p in enumerate(pairs):
        texts[f"{k}a"] = p.a
        texts[f"{k}b"] = p.b
    return pairs, texts


def cmd_noise(args: argparse.Namespace) -> None:
    pairs, texts = noise_pairs(args.eval_dir, args.per_kind, args.seed)
    n = len(pairs)
    a = [f"{k}a" for k in range(n)]
    b = [f"{k}b" for k in range(n)]
    dup = np.array([p.duplicate for p in pairs])
    lang = np.array([p.lang for p in pairs])
    kind = np.array([p.kind for p in pairs])
    detail = np.array([p.detail for p in pairs])
    print(f"{n} generated pairs (seed {args.seed}, {args.per_kind} per kind and language), "
          f"{int(dup.sum())} duplicates by the rule\n")
    configs = [Config(nm, pr, ve) for nm in NORMALISERS for pr in (False, True)
               for ve in ("jaccard", "overlap")]
    results: dict[str, BoolA] = {}
    d_of: dict[str, tuple[Directed, Texts]] = {}
    ranks: dict[int, np.ndarray] = {}
    for nm, fn in NORMALISERS.items():
        tt = compute_texts(texts, normalize=fn)
        d_of[nm] = (directed_from_ids(a, b, tt, dup, lang, kind, detail), tt)
    for cfg in configs:
        d, tt = d_of[cfg.norm]
        results[cfg.name] = detect(d, tt, cfg, args.t, args.cap, ranks)
    d0, t0 = d_of["v1"]
    check_today(d0, t0, results[TODAY.name])

    shown = [Config("v1", False, "jaccard"), Config("v1", True, "jaccard"),
             Config("visible", True, "jaccard"), Config("v1", True, "overlap"),
             Config("visible", True, "overlap"), Config("html=true", True, "overlap")]
    head = ["kind", "lang", "dup/non", *(c.name for c in shown)]
    rows = []
    for k in KINDS:
        for lg in ("zh", "en", "all"):
            m = (d0.kind == k) & ((d0.lang == lg) | (lg == "all"))
            if not m.any():
                continue
            rows.append([k, lg, f"{int(d0.dup[m].sum()) // 2}/{int((~d0.dup[m]).sum()) // 2}",
                         *(prf(results[c.name][m], d0.dup[m]) for c in shown)])
    print("P / R per kind (both directions; 'FP x/y' where the kind has no duplicate)\n")
    print(table(head, rows), "\n")
    rows = []
    for c in configs:
        det = results[c.name]
        rows.append([c.name, prf(det, d0.dup), f"{int((det & ~d0.dup).sum())}",
                     f"{int((~det & d0.dup).sum())}"])
    print(table(["configuration", "P / R, all kinds", "FP", "FN"], rows), "\n")

    # causes, today's default
    det = results[TODAY.name]
    cand = np.where(
        np.array([V.is_short(t0.vtext[q]) or V.is_short(t0.vtext[c])
                  for q, c in zip(d0.q.tolist(), d0.c.tolist(), strict=True)]),
        d0.dist <= V.SHORT_K, (d0.dist <= V.LONG_K) | d0.sig)
    rows = []
    for k in KINDS:
        m = d0.kind == k
        fn_ = m & d0.dup & ~det
        fp_ = m & ~d0.dup & det
        rows.append([k, str(fn_.sum()), str((fn_ & ~cand).sum()), str((fn_ & cand).sum()),
                     str(fp_.sum()),
                     f"{np.median(d0.dist[m & d0.dup]) if (m & d0.dup).any() else '-'}",
                     f"{np.median(d0.dist[m & ~d0.dup]) if (m & ~d0.dup).any() else '-'}"])
    print("Today's default (radius 11 + signature, Jaccard): why it misses (directed pairs)\n")
    print(table(["kind", "FN", "not a candidate", "rejected by verification", "FP",
                 "median distance dup", "median distance non"], rows), "\n")
    # markup: what it does to the fingerprint
    rows = []
    for lg in ("zh", "en"):
        for det_ in ("heavy", "light"):
            m = (d0.kind == "html") & (d0.lang == lg) & (d0.edit == det_)
            rows.append([lg, det_, *(f"{np.median(d_of[nm][0].dist[m]):.0f}" for nm in NORMALISERS),
                         f"{np.mean(d0.dist[m] > V.LONG_K):.2f}"])
    print("html pairs: median Hamming distance to the clean text\n")
    print(table(["lang", "markup", *NORMALISERS, "share > 11 bits (default)"], rows), "\n")


def directed_from_ids(a: list[str], b: list[str], t: Texts, dup: BoolA, lang: np.ndarray,
                      kind: np.ndarray, detail: np.ndarray) -> Directed:
    from lab.experiments.margin_probes import directed_from

    return directed_from(a, b, t, dup, lang, kind, detail)


def cmd_eval(args: argparse.Namespace) -> None:
    configs = [Config(nm, pr, ve) for nm in ("v1", "visible") for pr in (False, True)
               for ve in ("jaccard", "overlap")]
    rows = []
    for short in (False, True):
        ps = Q.load_pairs(args.eval_dir, short=short)
        sel = ps.short if short else ps.long
        res = []
        ranks: dict[int, np.ndarray] = {}
        cache: dict[str, tuple[Directed, Texts]] = {}
        for cfg in configs:
            if cfg.norm not in cache:
                tt = compute_texts(ps.texts, normalize=NORMALISERS[cfg.norm])
                cache[cfg.norm] = (directed(ps, tt, sel), tt)
            d, tt = cache[cfg.norm]
            det = detect(d, tt, cfg, args.t, args.cap, ranks)
            if cfg == TODAY:
                check_today(d, tt, det)
            res.append(prf(det, d.dup) + f" (F1 {Q.counts(det, d.dup).f1:.3f})")
        rows.append(["short (< 50)" if short else "long (>= 200)", *res])
    print(f"../shared/eval, both directions, probes T={args.t} cap {args.cap}: P / R (F1)\n")
    # one row per configuration reads better than 8 columns
    print(table(["configuration", "long (>= 200 chars)", "short (< 50 chars)"],
                [[c.name, rows[0][k + 1], rows[1][k + 1]] for k, c in enumerate(configs)]))


# ---------------------------------------------------------------- the store's defaults


def noise_pairset(pairs: list[NoisePair], scheme: Scheme) -> Q.PairSet:
    """Generated pairs as a :class:`lab.quality.PairSet`, both directions, texts
    normalised by ``scheme`` (as a store with it keeps them)."""
    fp = Fingerprinter(scheme)
    texts: dict[str, str] = {}
    a: list[str] = []
    b: list[str] = []
    for k, p in enumerate(pairs):
        texts[f"{k}a"], texts[f"{k}b"] = p.a, p.b
        a += [f"{k}a", f"{k}b"]
        b += [f"{k}b", f"{k}a"]
    vtexts = {i: V.alnum_only(fp.normalize(t)) for i, t in texts.items()}

    def two(xs: list[object]) -> np.ndarray:
        return np.array([x for x in xs for _ in (0, 1)])

    return Q.PairSet(
        "noise", texts, vtexts, a, b, two([p.duplicate for p in pairs]).astype(bool),
        two([p.lang for p in pairs]), two([p.kind for p in pairs]),
        two([p.detail for p in pairs]),
        np.array([min(len(vtexts[x]), len(vtexts[y])) for x, y in zip(a, b, strict=True)]),
    )


# (row name, scheme, rule version, probes): the store's default at each step
STEPS = [
    ("before probes: scheme v1, rule 1, radius 11", Scheme(version=1), 1, False),
    ("start of this work: v1, rule 1, probes", Scheme(version=1), 1, True),
    ("scheme v2 (visible), rule 1, probes", Scheme(), 1, True),
    ("scheme v1, rule 2 (overlap), probes", Scheme(version=1), 2, True),
    ("v2, rule 2, probes", Scheme(version=2), 2, True),
    ("new default: v3 (sees through double escaping), rule 2, probes", Scheme(), 2, True),
]


def step_decisions(pairs: list[NoisePair]) -> tuple[Q.PairSet, dict[str, BoolA]]:
    """Each step's default store decisions on the pairs (lab.quality's model of the
    store, which a test holds equal to the store)."""
    out: dict[str, BoolA] = {}
    sets: dict[tuple[str, int], Q.SetResult] = {}
    ps0 = None
    for name, scheme, rule, probes in STEPS:
        key = (scheme.to_json(), rule)
        if key not in sets:
            ps = noise_pairset(pairs, scheme)
            sets[key] = Q.measure_set(ps, [scheme], peers=False, rule=rule)
        res = sets[key]
        ps0 = ps0 or res.pairs
        r = Q.Rule(long_verify=True, sentences=True, rule=rule,
                   probe_t=V.PROBE_T if probes else None)
        out[name] = Q.decide(r, res.distance, res.similarity, res.pairs.short, res.sentences,
                             res.queries, res.probe_hit)
    assert ps0 is not None
    return ps0, out


def kind_table(ps: Q.PairSet, dec: dict[str, BoolA], kinds: Sequence[str],
               names: Sequence[str] | None = None) -> str:
    """P / R per kind and language, and over all pairs, of the decisions ``names``
    (default: all of ``dec``), as a markdown table."""
    names = list(dec) if names is None else list(names)

    def counts(m: BoolA) -> str:
        return f"{int(ps.duplicate[m].sum()) // 2}/{int((~ps.duplicate[m]).sum()) // 2}"

    rows = []
    for k in kinds:
        for lg in ("zh", "en"):
            m = (ps.kind == k) & (ps.lang == lg)
            if m.any():
                rows.append([k, lg, counts(m), *(prf(dec[n][m], ps.duplicate[m]) for n in names)])
    every = np.ones(len(ps.duplicate), dtype=bool)
    rows.append(["all", "", counts(every), *(prf(dec[n], ps.duplicate) for n in names)])
    return table(["kind", "lang", "dup/non", *names], rows)


def cmd_default(args: argparse.Namespace) -> None:
    from lab.noise import HELDOUT_KINDS, generate_heldout

    for seed in args.seeds:
        for title, kinds, pairs in (
            ("noise set", KINDS, generate(args.eval_dir, args.per_kind, seed)),
            ("held-out kinds", HELDOUT_KINDS, generate_heldout(args.eval_dir, args.per_kind,
                                                               seed)),
        ):
            ps, dec = step_decisions(pairs)
            print(f"{title}, seed {seed}: {len(pairs)} pairs, {int(ps.duplicate.sum()) // 2} "
                  "duplicates by the rule; P / R, both directions\n")
            print(kind_table(ps, dec, kinds), "\n")
            c = Q.counts(dec[STEPS[-1][0]], ps.duplicate)
            print(f"new default: TP {c.tp} FP {c.fp} FN {c.fn} (F1 {c.f1:.3f})\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("part", choices=["noise", "eval", "default"])
    ap.add_argument("--eval-dir", type=Path, default=None)
    ap.add_argument("--per-kind", type=int, default=150)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--seeds", type=int, nargs="+", default=[SEED, 7],
                    help="default: the generator seeds")
    ap.add_argument("--t", type=int, default=11, help="probe values per block")
    ap.add_argument("--cap", type=int, default=13)
    args = ap.parse_args()
    args.eval_dir = Q.resolve_eval_dir(args.eval_dir)
    t0 = time.perf_counter()
    {"noise": cmd_noise, "eval": cmd_eval, "default": cmd_default}[args.part](args)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
