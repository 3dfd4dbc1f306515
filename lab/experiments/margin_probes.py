"""Margin-ranked probes against radius probing, offline on ``../shared/eval`` (issue 14).

Run from the repository root (figures in ``lab/experiments/margin_probes.md``):

    uv run python -m lab.experiments.margin_probes probes     # candidate recall tables
    uv run python -m lab.experiments.margin_probes e2e        # + verification, long/short
    uv run python -m lab.experiments.margin_probes titles     # short pairs, two halves
    uv run python -m lab.experiments.margin_probes falsecand  # false candidates per query
    uv run python -m lab.experiments.margin_probes timing     # heap walk vs all 2^16 subsets

(``--eval-dir ../shared/eval`` when the repository is not beside ``shared``.)

Everything is offline: fingerprints and margins come from
:func:`simhash_pg.text.simhash.vote_with_margins` under the default scheme, the
candidate test is the index's (``b_i`` among the query's probe values of
block ``i`` for some ``i``, Hamming <= cap, or equal sentence signatures),
and verification is :func:`simhash_pg.verify.similarity` against
rule 1's thresholds (``TEXT_RULES[1].threshold``), as ``VerifyPolicy.accept`` did.

Every pair counts in both directions (``a`` queries for ``b``, ``b`` for
``a``): probe sets depend on the query's margins, so the two differ.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lab import quality as Q
from simhash_pg import verify as V
from simhash_pg.bits import BLOCKS
from simhash_pg.text.features import extract_hashed
from simhash_pg.text.probes import block_bits, iter_flips
from simhash_pg.text.signatures import sentence_signature_normalized
from simhash_pg.text.simhash import Fingerprinter, vote_with_margins
from simhash_pg.verify.overlap import OVERLAP_THRESHOLD, overlap

TMAX = 64  # probe values listed per block (shared budgets may put 48 in one block)
ROWS = 50_000_000
FloatA = npt.NDArray[np.float64]
IntA = npt.NDArray[np.int64]
BoolA = npt.NDArray[np.bool_]


# --------------------------------------------------------------------------
# texts: fingerprint, margins, verification text, signature


@dataclass
class Texts:
    ids: list[str]
    pos: dict[str, int]
    fp: npt.NDArray[np.uint64]
    margins: IntA  # (n, 64), bit j of the unsigned fingerprint
    scale: FloatA  # sqrt of the sum of squared (scaled) weights: the margins' natural unit
    vtext: list[str]
    sig: list[int | None]

    def raw_blocks(self) -> IntA:
        """(n, 4) unsigned 16-bit blocks b0..b3 (bits.py order: b0 = bits 48-63)."""
        shifts = np.array([block_bits(i).start for i in range(BLOCKS)], dtype=np.uint64)
        return ((self.fp[:, None] >> shifts) & np.uint64(0xFFFF)).astype(np.int64)


def compute_texts(texts: dict[str, str], scheme: Any = None,
                  normalize: Callable[[str], str] | None = None) -> Texts:
    """Everything a query needs of each text; ``normalize`` replaces the scheme's."""
    fper = Fingerprinter(scheme)
    norm_fn = fper.normalize if normalize is None else normalize
    ids = sorted(texts)
    fps, margins, scale, vt, sig = [], [], [], [], []
    for i in ids:
        norm = norm_fn(texts[i])
        h, w = extract_hashed(norm if normalize else fper.feature_text(texts[i], norm),
                              fper.scheme)
        fp, m = vote_with_margins(h, w)
        fps.append(fp)
        margins.append(m)
        scale.append(float(np.sqrt(np.sum((np.rint(np.asarray(w) * 65536.0)) ** 2))))
        vt.append(V.alnum_only(norm))
        sig.append(sentence_signature_normalized(norm))
    return Texts(ids, {x: k for k, x in enumerate(ids)}, np.array(fps, dtype=np.uint64),
                 np.array(margins, dtype=np.int64), np.array(scale), vt, sig)


def popcount(x: npt.NDArray[np.uint64]) -> IntA:
    return np.unpackbits(x.astype("<u8").view(np.uint8)).reshape(-1, 64).sum(axis=1)


# --------------------------------------------------------------------------
# probe lists per text: the TMAX cheapest flip masks of each block and their cost

BitCostFn = Callable[[IntA, float], list[float]]  # (64 margins, scale) -> 64 bit costs


def squared(m: IntA, scale: float) -> list[float]:
    return [int(x) * int(x) for x in m]


def absolute(m: IntA, scale: float) -> list[float]:
    return [abs(int(x)) for x in m]


def shuffled(seed: int) -> BitCostFn:
    """The control: the query's own squared margins, dealt to its bits in random order."""
    rng = np.random.default_rng(seed)

    def fn(m: IntA, scale: float) -> list[float]:
        return squared(m[rng.permutation(64)], scale)

    return fn


@dataclass
class ProbeLists:
    masks: IntA  # (n, 4, TMAX)
    costs: FloatA  # (n, 4, TMAX), comparable across blocks of one text
    sizes: IntA  # (n, 4, TMAX) bits flipped


def probe_lists(t: Texts, fn: BitCostFn, offsets: Callable[[IntA, float], FloatA] | None = None,
                tmax: int = TMAX) -> ProbeLists:
    n = len(t.ids)
    masks = np.zeros((n, BLOCKS, tmax), dtype=np.int64)
    costs = np.zeros((n, BLOCKS, tmax))
    for k in range(n):
        c = fn(t.margins[k], float(t.scale[k]))
        base = offsets(t.margins[k], float(t.scale[k])) if offsets is not None else None
        for i in range(BLOCKS):
            r = block_bits(i)
            for j, (cost, mask) in enumerate(iter_flips(c[r.start : r.stop])):
                if j == tmax:
                    break
                masks[k, i, j] = mask
                costs[k, i, j] = float(cost) + (base[i] if base is not None else 0.0)
    sizes = np.unpackbits(masks.astype("<u2").view(np.uint8), axis=-1).reshape(n, BLOCKS, -1, 16)
    return ProbeLists(masks, costs, sizes.sum(axis=-1))


@dataclass
class Directed:
    """Pairs as directed look-ups: query q looking for candidate c."""

    q: IntA
    c: IntA
    dup: BoolA
    dist: IntA
    sig: BoolA
    sim: FloatA
    thr: FloatA
    lang: npt.NDArray[np.str_]
    kind: npt.NDArray[np.str_]
    edit: npt.NDArray[np.str_]
    ovl: FloatA  # simhash_pg.verify.overlap.overlap: the labelling rule on verification texts

    def ranks(self, t: Texts, pl: ProbeLists) -> IntA:
        """(P, 4): where c's block sits in q's probe list (TMAX: not listed)."""
        rb = t.raw_blocks()
        x = rb[self.q] ^ rb[self.c]
        hit = pl.masks[self.q] == x[:, :, None]
        return np.where(hit.any(axis=2), hit.argmax(axis=2), pl.masks.shape[2])


def directed(ps: Q.PairSet, t: Texts, mask: BoolA) -> Directed:
    return directed_from([x for x, m in zip(ps.a, mask, strict=True) if m],
                         [x for x, m in zip(ps.b, mask, strict=True) if m], t,
                         ps.duplicate[mask], ps.lang[mask], ps.kind[mask], ps.edit[mask])


def directed_from(a: Sequence[str], b: Sequence[str], t: Texts, dup: BoolA,
                  lang: npt.NDArray[np.str_], kind: npt.NDArray[np.str_],
                  edit: npt.NDArray[np.str_]) -> Directed:
    """Pairs (a, b) as two directed look-ups each: a for b, then b for a."""
    ia = np.array([t.pos[x] for x in a], dtype=np.int64)
    ib = np.array([t.pos[x] for x in b], dtype=np.int64)
    dist = popcount(t.fp[ia] ^ t.fp[ib])
    both = list(zip(ia.tolist(), ib.tolist(), strict=True))
    sig = np.array([t.sig[x] is not None and t.sig[x] == t.sig[y] for x, y in both], dtype=bool)
    sim = np.array([V.similarity(t.vtext[x], t.vtext[y]) for x, y in both])
    thr = np.array([V.TEXT_RULES[1].threshold(V.is_short(t.vtext[x]) or V.is_short(t.vtext[y]))
                    for x, y in both])
    ovl = np.array([overlap(t.vtext[x], t.vtext[y]) for x, y in both])

    def two(x: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return np.concatenate([x, x])

    return Directed(np.concatenate([ia, ib]), np.concatenate([ib, ia]), two(dup), two(dist),
                    two(sig), two(sim), two(thr), two(lang), two(kind), two(edit), two(ovl))


# --------------------------------------------------------------------------
# budget rules: how many of each block's list a query probes


def equal(t_per_block: int) -> Callable[[ProbeLists], IntA]:
    def rule(pl: ProbeLists) -> IntA:
        return np.full(pl.masks.shape[:2], t_per_block, dtype=np.int64)

    return rule


def shared(total: int) -> Callable[[ProbeLists], IntA]:
    """The ``total`` cheapest (block, subset) pairs over all four blocks of the query."""

    def rule(pl: ProbeLists) -> IntA:
        n, b, tm = pl.costs.shape
        flat = pl.costs.reshape(n, b * tm)
        # ties: block order, then list order (the flattened index)
        order = np.lexsort((np.broadcast_to(np.arange(b * tm), flat.shape), flat), axis=1)
        chosen = order[:, :total] // tm
        return np.stack([(chosen == i).sum(axis=1) for i in range(b)], axis=1)

    return rule


def union_greedy(total: int) -> Callable[[ProbeLists], IntA]:
    """Greedy for P(some block hit), blocks independent; costs are -log P(flip set)."""

    def rule(pl: ProbeLists) -> IntA:
        n, b, tm = pl.costs.shape
        prob = np.exp(-pl.costs)
        out = np.zeros((n, b), dtype=np.int64)
        for k in range(n):
            got = [0.0] * b
            cnt = [0] * b
            heap = [(-prob[k, i, 0] / 1.0, i) for i in range(b)]
            heapq.heapify(heap)
            for _ in range(total):
                _, i = heapq.heappop(heap)
                got[i] += prob[k, i, cnt[i]]
                cnt[i] += 1
                if cnt[i] < tm:
                    # gain of the next value ~ its probability / P(block i still missed)
                    heapq.heappush(heap, (-prob[k, i, cnt[i]] / max(1e-12, 1 - got[i]), i))
            out[k] = cnt
        return out

    return rule


def found(d: Directed, ranks: IntA, counts: IntA, cap: int, signature: bool = True) -> BoolA:
    hit = (ranks < counts[d.q]).any(axis=1) & (d.dist <= cap)
    return hit | d.sig if signature else hit


# --------------------------------------------------------------------------
# the flip-probability model of the joint rule, calibrated on duplicate pairs


def flip_model(t: Texts, d: Directed, train: BoolA, bins: int = 40) -> tuple[FloatA, FloatA]:
    """P(bit flips | |margin| / scale) on the training duplicates, binned, made monotone."""
    sel = train & d.dup
    z = np.abs(t.margins[d.q[sel]]) / t.scale[d.q[sel], None]
    x = t.fp[d.q[sel]] ^ t.fp[d.c[sel]]
    flips = ((x[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)).astype(bool)
    edges = np.quantile(z, np.linspace(0, 1, bins + 1))
    idx = np.clip(np.searchsorted(edges, z, side="right") - 1, 0, bins - 1)
    p = np.array([flips[idx == b].mean() for b in range(bins)])
    p = np.minimum.accumulate(p)  # flip probability falls with the margin
    mids = np.array([np.median(z[idx == b]) for b in range(bins)])
    return mids, np.clip(p, 1e-9, 0.5)


def joint_costs(mids: FloatA, p: FloatA) -> tuple[BitCostFn, Callable[[IntA, float], FloatA]]:
    def prob(m: IntA, scale: float) -> FloatA:
        return np.interp(np.abs(m) / scale, mids, p)

    def fn(m: IntA, scale: float) -> list[float]:
        q = prob(m, scale)
        return np.log((1 - q) / q).tolist()  # >= 0: q <= 0.5

    def offsets(m: IntA, scale: float) -> FloatA:
        q = prob(m, scale)
        return np.array([-np.log1p(-q[block_bits(i).start : block_bits(i).stop]).sum()
                         for i in range(BLOCKS)])

    return fn, offsets


# --------------------------------------------------------------------------
# false candidates at ROWS rows


def _binom_cdf_48() -> FloatA:
    pmf = np.array([math.comb(48, k) for k in range(49)], dtype=np.float64) / 2.0**48
    return np.cumsum(pmf)


def random_rows(pl: ProbeLists, counts: IntA, cap: int, rows: int = ROWS) -> tuple[float, float]:
    """(index entries walked, rows within the cap) per query, against random fingerprints."""
    cdf = _binom_cdf_48()
    tm = pl.sizes.shape[2]
    take = np.arange(tm)[None, None, :] < counts[:, :, None]
    walked = counts.sum(axis=1).mean() * rows / 65536
    left = np.clip(cap - pl.sizes, -1, 48)
    p_cap = np.where(left >= 0, cdf[np.maximum(left, 0)], 0.0)
    within = (p_cap * take).sum(axis=(1, 2)).mean() * rows / 65536
    return float(walked), float(within)


# --------------------------------------------------------------------------
# reporting


def table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def load(eval_dir: Path, short: bool) -> tuple[Q.PairSet, Texts]:
    ps = Q.load_pairs(eval_dir, short=short)
    return ps, compute_texts(ps.texts)


def rules_for(t: Texts, d: Directed, train: BoolA | None = None) -> dict[str, Any]:
    """Probe lists under each bit-cost rule (the joint model trained on ``train``)."""
    tm = time.perf_counter()
    out: dict[str, Any] = {"squared": probe_lists(t, squared)}
    out["absolute"] = probe_lists(t, absolute)
    out["random order"] = probe_lists(t, shuffled(1))
    if train is not None:
        mids, p = flip_model(t, d, train)
        fn, off = joint_costs(mids, p)
        out["joint"] = probe_lists(t, fn, off)
        out["_model"] = (mids, p)
    out["_seconds"] = round(time.perf_counter() - tm, 1)
    return out


def cmd_probes(args: argparse.Namespace) -> None:
    ps, t = load(args.eval_dir, short=False)
    d = directed(ps, t, ps.long)
    dups = d.dup
    half = np.array([x.startswith("zh") for x in d.lang])  # train on zh, test on en, and back
    print(f"long pairs (>= {Q.LONG_BAND_MIN} chars): {int(ps.long.sum())}, duplicates "
          f"{int(ps.duplicate[ps.long].sum())}; directed duplicates {int(dups.sum())}\n")
    base = []
    for r in (11, 12, 13):
        lk = 4 * sum(math.comb(16, i) for i in range(r // 4 + 1))
        near = d.dist <= r
        base.append([f"radius {r}", lk, f"{near[dups].mean():.3f}",
                     f"{(near | d.sig)[dups].mean():.3f}"])
    print(table(["probing", "look-ups", "candidate recall", "+ signature"], base), "\n")

    lists = rules_for(t, d, train=half)
    lists_en = rules_for(t, d, train=~half)
    print(f"(probe lists in {lists['_seconds']} s per rule set)\n")

    def rec(name: str, pl: ProbeLists, counts: IntA, cap: int, sig: bool = True,
            rk: IntA | None = None) -> list[Any]:
        ranks = d.ranks(t, pl) if rk is None else rk
        f = found(d, ranks, counts, cap, sig)
        lk = counts.sum(axis=1).mean() + (1 if sig else 0)
        walked, within = random_rows(pl, counts, cap)
        return [name, cap, f"{lk:.1f}", f"{f[dups].mean():.4f}",
                f"{f[dups & half].mean():.4f}", f"{f[dups & ~half].mean():.4f}",
                f"{walked:,.0f}", f"{within:.1f}"]

    head = ["rule", "cap", "look-ups", "cand. recall", "zh", "en", "walked @50M",
            "rows <= cap @50M"]
    ranks = {k: d.ranks(t, v) for k, v in lists.items() if not k.startswith("_")}

    print("### The issue's table\n")
    rows = []
    for tb in (8, 10):
        rows.append(rec(f"squared, T={tb}", lists["squared"], equal(tb)(lists["squared"]), 13,
                        rk=ranks["squared"]))
    rows.append(rec("random order, T=10", lists["random order"],
                    equal(10)(lists["random order"]), 13, rk=ranks["random order"]))
    rows.append(rec("squared, T=10, cap 11", lists["squared"], equal(10)(lists["squared"]), 11,
                    rk=ranks["squared"]))
    rows.append(rec("squared, T=10, no signature", lists["squared"],
                    equal(10)(lists["squared"]), 13, sig=False, rk=ranks["squared"]))
    rows.append(rec("squared, T=10, cap 11, no signature", lists["squared"],
                    equal(10)(lists["squared"]), 11, sig=False, rk=ranks["squared"]))
    uneven = np.tile(np.array([12, 12, 12, 11]), (len(t.ids), 1))
    rows.append(rec("squared, T=12,12,12,11", lists["squared"], uneven, 13, rk=ranks["squared"]))
    print(table(head, rows), "\n")

    print("### T per block x cap, squared margins, + signature\n")
    grid_head = ["T \\ cap", *(f"cap {c}" for c in (11, 12, 13, 14)), "look-ups"]
    grid = []
    for tb in range(6, 13):
        cnt = equal(tb)(lists["squared"])
        grid.append([tb, *(f"{found(d, ranks['squared'], cnt, c)[dups].mean():.4f}"
                           for c in (11, 12, 13, 14)), 4 * tb + 1])
    grid.append(["rows <= cap @50M, T=11, random model",
                 *(f"{random_rows(lists['squared'], equal(11)(lists['squared']), c)[1]:.1f}"
                   for c in (11, 12, 13, 14)), ""])
    print(table(grid_head, grid), "\n")

    print("### Bit cost and budget rule at equal look-ups (cap 13, + signature)\n")
    rows = []
    for total in (32, 40, 44):
        tb = total // 4
        for name in ("squared", "absolute"):
            pl = lists[name]
            rows.append(rec(f"{name}, equal T={tb}", pl, equal(tb)(pl), 13, rk=ranks[name]))
            rows.append(rec(f"{name}, shared {total}", pl, shared(total)(pl), 13,
                            rk=ranks[name]))
        for name, ls in (("joint (trained zh)", lists), ("joint (trained en)", lists_en)):
            pl = ls["joint"]
            rk = ranks["joint"] if ls is lists else d.ranks(t, pl)
            rows.append(rec(f"{name}, equal T={tb}", pl, equal(tb)(pl), 13, rk=rk))
            rows.append(rec(f"{name}, shared {total}", pl, shared(total)(pl), 13, rk=rk))
            rows.append(rec(f"{name}, union-greedy {total}", pl, union_greedy(total)(pl), 13,
                            rk=rk))
    print(table(head, rows), "\n")
    mids, p = lists["_model"]
    print("flip model (trained on zh): |margin|/scale -> P(flip): " + ", ".join(
        f"{m:.3f}:{q:.3f}" for m, q in list(zip(mids, p, strict=True))[::5]) + "\n")

    # where the misses are, for the recommended setting
    cnt = equal(args.t)(lists["squared"])
    f = found(d, ranks["squared"], cnt, args.cap)
    miss = dups & ~f
    print(f"### Misses at T={args.t}, cap {args.cap} (+ signature): {int(miss.sum())} of "
          f"{int(dups.sum())} directed duplicates\n")
    rows = []
    for why, m in (("Hamming > cap", miss & (d.dist > args.cap)),
                   ("within cap, no block probed", miss & (d.dist <= args.cap))):
        rows.append([why, int(m.sum())])
    print(table(["why", "directed pairs"], rows), "\n")
    syn = np.char.startswith(d.kind, "synthetic")
    groups = [(k, d.kind == k) for k in sorted(set(d.kind.tolist())) if not k.startswith("syn")]
    groups += [(f"synthetic: {e}", syn & (d.edit == e)) for e in sorted(set(d.edit[syn].tolist()))]
    rows = [[k, int((miss & g).sum()), int((dups & g).sum()),
             int((miss & g & (d.dist > args.cap)).sum())] for k, g in groups if (miss & g).any()]
    print(table(["kind / edit", "missed", "duplicates", "of them Hamming > cap"], rows), "\n")


def decide(d: Directed, cand: BoolA) -> BoolA:
    return cand & (d.sim >= d.thr)


def prf(det: BoolA, dup: BoolA) -> str:
    c = Q.counts(det, dup)
    return f"{c.precision:.4f} / {c.recall:.4f} / {c.f1:.4f} ({c.tp}/{c.fp}/{c.fn})"


def both(d: Directed, cand: BoolA) -> list[str]:
    """P/R of candidates verified today's way and by the labelling rule's overlap."""
    return [prf(decide(d, cand), d.dup), prf(cand & (d.ovl >= OVERLAP_THRESHOLD), d.dup)]


def cmd_e2e(args: argparse.Namespace) -> None:
    head = ["set", "candidates", "look-ups", "Jaccard (today): P / R / F1 (TP/FP/FN)",
            "overlap >= 0.8: P / R / F1 (TP/FP/FN)"]
    for short in (False, True):
        ps, t = load(args.eval_dir, short=short)
        sel = ps.short if short else ps.long
        d = directed(ps, t, sel)
        name = "short (< 50 chars)" if short else "long (>= 200 chars)"
        lk_r = 4 * sum(math.comb(16, i) for i in range(V.LONG_K // 4 + 1))
        pl = probe_lists(t, squared)
        rk = d.ranks(t, pl)
        rows = [[name, f"radius {V.LONG_K} + sig (today's verify=all)", lk_r + 1,
                 *both(d, (d.dist <= V.LONG_K) | d.sig)]]
        for tb in sorted({args.t, 8, 10, 11, 12, 16}):
            for cap in (11, 12, 13):
                cnt = equal(tb)(pl)
                rows.append([name, f"squared T={tb} cap {cap} + sig", 4 * tb + 1,
                             *both(d, found(d, rk, cnt, cap))])
        print(table(head, rows), "\n")
        if short:
            # short texts: what do their margins look like?
            sizes = np.abs(t.margins[d.q]) / 65536
            print(f"short queries: median |margin| {np.median(sizes):.1f} features, "
                  f"share of bits with margin 0: {(t.margins[d.q] == 0).mean():.3f}, "
                  f"distance of duplicates: p50 {np.median(d.dist[d.dup]):.0f}, "
                  f"p90 {np.percentile(d.dist[d.dup], 90):.0f}\n")
        else:
            cnt = equal(args.t)(pl)
            det = decide(d, found(d, rk, cnt, args.cap))
            rows = []
            for lang in ("zh", "en"):
                m = d.lang == lang
                rows.append([lang, prf(det[m], d.dup[m]),
                             prf(decide(d, (d.dist <= V.LONG_K) | d.sig)[m], d.dup[m])])
            print(table(["lang", f"T={args.t} cap {args.cap}, Jaccard", "radius 11 + sig, Jaccard"],
                        rows), "\n")


def cmd_falsecand(args: argparse.Namespace) -> None:
    """Index entries walked and rows within the cap per query, measured on the news corpus."""
    texts: dict[str, str] = {}
    for name in ("corpus_zh.jsonl", "corpus_en.jsonl"):
        with (args.eval_dir / name).open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                texts[rec["id"]] = rec["text"]
    related: set[tuple[str, str]] = set()
    with (args.eval_dir / "pairs.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            p = json.loads(line)
            if p.get("overlap", 0) >= 0.3:
                related |= {(p["a"], p["b"]), (p["b"], p["a"])}
    t = compute_texts(texts)
    rb = t.raw_blocks()
    n = len(t.ids)
    index = [dict[int, list[int]]() for _ in range(BLOCKS)]
    for k in range(n):
        for i in range(BLOCKS):
            index[i].setdefault(int(rb[k, i]), []).append(k)
    pl = probe_lists(t, squared)
    rows = []
    for tb in (8, 10, 11):
        for cap in (11, 12, 13):
            walked = within = 0
            for k in range(n):
                seen: set[int] = set()
                for i in range(BLOCKS):
                    for j in range(tb):
                        for o in index[i].get(int(rb[k, i] ^ pl.masks[k, i, j]), ()):
                            if o != k and (t.ids[k], t.ids[o]) not in related:
                                walked += 1
                                seen.add(o)
                within += sum(1 for o in seen if (int(t.fp[k]) ^ int(t.fp[o])).bit_count() <= cap)
            model = random_rows(pl, equal(tb)(pl), cap, rows=n - 1)
            scale = ROWS / (n - 1)
            rows.append([tb, cap, f"{walked / n * scale:,.0f}", f"{model[0] * scale:,.0f}",
                         f"{within / n * scale:.1f}", f"{model[1] * scale:.1f}"])
    print(f"{n} news articles as the store, each queried against the others "
          f"(pairs with overlap >= 0.3 left out); scaled to {ROWS:,} rows\n")
    print(table(["T", "cap", "walked (measured)", "walked (random model)",
                 "rows <= cap (measured)", "rows <= cap (random model)"], rows), "\n")


def cmd_timing(args: argparse.Namespace) -> None:
    from simhash_pg.text.probes import block_probes, cheapest_flips

    rng = np.random.default_rng(0)
    ms = rng.integers(-2000, 2000, (500, 64)) * 65536
    fps = [sum(1 << j for j in range(64) if m[j] > 0) for m in ms]
    t0 = time.perf_counter()
    for fp, m in zip(fps, ms, strict=True):
        block_probes(fp, m, args.t)
    heap = (time.perf_counter() - t0) / len(fps)
    bits = ((np.arange(1 << 16)[:, None] >> np.arange(16)) & 1).astype(np.float64)
    t0 = time.perf_counter()
    for m in ms[:100]:
        c = m.astype(np.float64) ** 2
        for i in range(BLOCKS):
            cost = bits @ c[16 * i : 16 * i + 16]
            part = np.argpartition(cost, args.t)[: args.t]
            part[np.argsort(cost[part], kind="stable")]
    brute = (time.perf_counter() - t0) / 100
    t0 = time.perf_counter()
    for m in ms[:100]:
        cheapest_flips([int(x) ** 2 for x in m[:16]], 1000)
    deep = (time.perf_counter() - t0) / 100
    print(table(["method", "ms per query (4 blocks)"], [
        [f"heap walk, T={args.t} (block_probes, checks included)", f"{heap * 1e3:.3f}"],
        [f"numpy, all 65,536 subsets, argpartition T={args.t}", f"{brute * 1e3:.3f}"],
        ["heap walk, T=1000, one block", f"{deep * 1e3:.3f}"],
    ]))


def cmd_titles(args: argparse.Namespace) -> None:
    """Short pairs: probes (no signature: a short pair's test has none) against radius 11,
    on two halves of the set (a pair's two directions in one half)."""
    ps, t = load(args.eval_dir, short=True)
    d = directed(ps, t, ps.short)
    pl = probe_lists(t, squared)
    rk = d.ranks(t, pl)
    half = (np.arange(len(d.q)) // 2) % 2
    parts = (half == 0, half == 1, np.ones(len(d.q), dtype=bool))

    def cells(cand: BoolA) -> list[str]:
        out = []
        for m in parts:
            c = Q.counts(decide(d, cand)[m], d.dup[m])
            rec_c = (cand & d.dup)[m].sum() / d.dup[m].sum()
            out.append(f"{rec_c:.4f} / {c.precision:.4f} / {c.recall:.4f} / {c.f1:.4f}")
        return out

    lk_r = 4 * sum(math.comb(16, i) for i in range(V.SHORT_K // 4 + 1))
    rows = [[f"radius {V.SHORT_K} (before)", lk_r, *cells(d.dist <= V.SHORT_K)]]
    for tb in sorted({args.t, 8, 10, 11, 12, 16}):
        for cap in (11, 12, 13, 14):
            rows.append([f"squared T={tb} cap {cap}", 4 * tb,
                         *cells(found(d, rk, equal(tb)(pl), cap, signature=False))])
    head = ["candidates", "look-ups"] + [f"{n}: cand. recall / P / R / F1"
                                         for n in ("half A", "half B", "all")]
    print(table(head, rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("part", choices=["probes", "e2e", "falsecand", "timing", "titles"])
    ap.add_argument("--eval-dir", type=Path, default=None,
                    help="the labelled set (default: shared/eval beside the repository)")
    ap.add_argument("--t", type=int, default=10, help="probe values per block")
    ap.add_argument("--cap", type=int, default=13, help="Hamming cap on probed candidates")
    args = ap.parse_args()
    args.eval_dir = Q.resolve_eval_dir(args.eval_dir)
    t0 = time.perf_counter()
    {"probes": cmd_probes, "e2e": cmd_e2e, "falsecand": cmd_falsecand,
     "timing": cmd_timing, "titles": cmd_titles}[args.part](args)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
