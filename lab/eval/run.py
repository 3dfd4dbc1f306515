"""``simhash-pg eval``, the run: measure every rule and peer on the labelled pairs.

:func:`build_report` returns a JSON-able report; :mod:`lab.eval.render` turns
it into tables.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
import numpy as np

EVAL_DB = "simhash_eval"
# The store's k today, and the k recommended from docs/quality.md.
MAIN_KS = (3, 9)


def build_report(
    eval_dir: Path,
    *,
    schemes: list[str | None],
    ks: list[int],
    peers: bool,
    store: bool,
    dsn: str | None,
    sample: int | None,
    seed: int,
    workers: int | None,
    progress: Any,
    store_verify: tuple[str, ...] = ("short", "all"),
) -> dict[str, Any]:
    """Run the whole evaluation and return the JSON-able report."""
    from lab import quality as Q
    from simhash_pg import verify as V
    from simhash_pg.text.schemes import get_scheme
    from simhash_pg.text.signatures import DEFAULT_SENTENCES

    t0 = time.perf_counter()
    first = get_scheme(schemes[0])
    sets = []
    for short in (False, True):
        f = eval_dir / ("pairs_short.jsonl" if short else "pairs.jsonl")
        if f.exists():
            progress(f"loading {f.name}")
            sets.append(
                Q.load_pairs(
                    eval_dir, short=short, sample=sample, seed=seed, scheme=first
                )
            )
    if not sets:
        raise click.UsageError(f"no pairs.jsonl or pairs_short.jsonl in {eval_dir}")

    rules = []
    for k in ks:
        rules += [Q.Rule(k=k, short_verify=False), Q.Rule(k=k), Q.Rule(k=k, sentences=True)]
    rules += [Q.Rule(long_verify=True), Q.Rule(long_verify=True, sentences=True)]
    results = [
        Q.measure_set(ps, schemes, peers=peers, workers=workers, progress=progress) for ps in sets
    ]

    store_info: dict[str, Any] = {"used": store}
    # display name -> (verify mode, k, per set: which pairs the store matched)
    store_verified: dict[str, tuple[str, int, list[Any]]] = {}
    if store:
        from simhash_pg.cli.common import fresh_database
        from simhash_pg.store import SimhashStore

        k_max = max(r.max_k for r in rules)
        target = dsn or fresh_database(EVAL_DB)
        t = time.perf_counter()
        # Keep every text (verify="all") so that every mode can be asked for
        # below; the distances come from an unverified reader.
        with SimhashStore(target, scheme=first, verify="all") as writer:
            Q.store_distances(sets, writer, 0, progress=progress)
        with SimhashStore(target, scheme=first, verify="off") as st:
            dists = Q.store_distances(sets, st, k_max, progress=progress)
        for mode in store_verify:
            for k in ks if mode != "all" else ks[:1]:
                with SimhashStore(target, scheme=first, verify=mode) as st:  # type: ignore[arg-type]
                    store_verified[f"SimhashStore verify={mode} k={k}"] = (
                        mode, k, Q.store_decisions(sets, st, k, progress=progress))
        store_info["seconds"] = round(time.perf_counter() - t, 2)
        store_info["k_queried"] = k_max
        for res, d in zip(results, dists, strict=True):
            res.store_distance = d
            # Exactness check: the store must return b exactly when the
            # fingerprints are within k_max.
            fp_within = res.distance <= k_max
            st_within = d <= k_max
            store_info[res.pairs.name] = {
                "pairs": len(d),
                "disagree_with_fingerprints": int(
                    (fp_within != st_within).sum() + (fp_within & (d != res.distance)).sum()
                ),
            }

    policy = V.VerifyPolicy(rule=V.RULE_VERSION)
    text_rule = policy.text_rule
    measure, short_n, long_n = text_rule.measure, text_rule.short_ngram, text_rule.long_ngram
    report: dict[str, Any] = {
        "eval_dir": str(eval_dir),
        "scheme": first.to_json(),
        "schemes": [get_scheme(s).to_json() for s in schemes],
        "ks": ks,
        "sample": sample,
        "via": "store" if store else "fingerprints",
        "store": store_info,
        "constants": {
            "SHORT_TEXT_CHARS": V.SHORT_TEXT_CHARS,
            "SHORT_K": V.SHORT_K,
            "MEASURE": measure,
            "SHORT_NGRAM": short_n,
            "RULE": V.RULE_VERSION,
            "SHORT_THRESHOLD": policy.text_rule.threshold(True),
            "LONG_K": V.LONG_K,
            "LONG_NGRAM": long_n,
            "LONG_THRESHOLD": policy.text_rule.threshold(False),
            "SENTENCES": DEFAULT_SENTENCES,
        },
        "peers": {
            "simhash": "PyPI simhash, Simhash(text) defaults (char 4-grams of word chars)",
            "minhash": "datasketch MinHashLSH(threshold=0.8, num_perm=128), "
            "char 3-grams of lower-cased word chars",
        }
        if peers
        else None,
        "sets": {},
    }
    for res in results:
        ps = res.pairs
        systems = Q.systems(
            res,
            rules,
            ks,
            via_store=store,
        )
        if store:
            # the store's own verified answers, and whether they agree with
            # the rule that models them (they must: same accept())
            si = sets.index(ps)
            for name, (mode, k, dets) in store_verified.items():
                systems[name] = dets[si]
                # under "all" a title's keys are sentence keys too (revision 0015)
                rule = (Q.Rule(long_verify=True, sentences=True)
                        if mode == "all" else Q.Rule(k=k, short_verify=mode == "short"))
                model = Q.decide(rule, res.store_distance if res.store_distance is not None
                                 else res.distance, res.similarity, ps.short, res.sentences,
                                 res.queries, res.probe_hit)
                store_info[ps.name].setdefault("verified_disagree_with_rule", {})[name] = int(
                    (model != dets[si]).sum())
        entry: dict[str, Any] = {
            "pairs": len(ps),
            "duplicates": int(ps.duplicate.sum()),
            "seconds": res.seconds,
            "systems": {},
            "long_ge_200": {},
            "misses": {},
        }
        for name, det in systems.items():
            entry["systems"][name] = {
                dim: {g: c.to_dict() for g, c in groups.items()}
                for dim, groups in Q.breakdown(det, ps).items()
            }
            entry["long_ge_200"][name] = Q.counts(det[ps.long], ps.duplicate[ps.long]).to_dict()
        for r in (*(Q.Rule(k=k) for k in ks), Q.Rule(long_verify=True, sentences=True)):
            if r.label() not in systems:
                continue
            entry["misses"][r.label()] = Q.misses(systems[r.label()], ps)
        # k sweeps on fingerprint distances: plain, and with verification.
        sweeps: dict[str, Any] = {}
        all_dists = {first.to_json(): res.distance, **res.other_schemes}
        for name, d in all_dists.items():
            plain = Q.sweep(d, ps.duplicate)
            verified = Q.sweep(
                d,
                ps.duplicate,
                passes=res.similarity >= np.where(ps.short, policy.text_rule.threshold(True),
                                                  policy.text_rule.threshold(False)),
            )
            sweeps[name] = {
                "auc": round(Q.auc_of(d, ps.duplicate, ps.lang, ps.kind), 4),
                "plain": {str(k): c.to_dict() for k, c in plain.items()},
                "verified": {str(k): c.to_dict() for k, c in verified.items()},
                "best_plain": Q.best_k(plain),
                "best_verified": Q.best_k(verified),
                "histogram": Q.histogram(d, ps.duplicate),
            }
            if ps.name == "documents":
                lp = Q.sweep(d[ps.long], ps.duplicate[ps.long])
                sweeps[name]["best_plain_long_ge_200"] = Q.best_k(lp)
        if res.peer_simhash is not None:
            ps_sweep = Q.sweep(res.peer_simhash, ps.duplicate)
            sweeps["simhash (PyPI)"] = {
                "auc": round(Q.auc_of(res.peer_simhash, ps.duplicate, ps.lang, ps.kind), 4),
                "plain": {str(k): c.to_dict() for k, c in ps_sweep.items()},
                "best_plain": Q.best_k(ps_sweep),
                "histogram": Q.histogram(res.peer_simhash, ps.duplicate),
            }
        entry["sweep"] = sweeps
        if ps.name == "documents":
            entry["sentences"] = _sentence_summary(res, ks)
        report["sets"][ps.name] = entry
    report["seconds"] = round(time.perf_counter() - t0, 2)
    return report


def _sentence_summary(res: Any, ks: list[int]) -> dict[str, Any]:
    """What the n-longest-sentences signature adds to SimHash (OR-combined)."""
    from lab import quality as Q
    from simhash_pg import verify as V

    ps = res.pairs
    sig = res.sentences
    rule = V.TEXT_RULES[V.RULE_VERSION]
    ok = res.similarity >= np.where(ps.short, rule.threshold(True), rule.threshold(False))
    out: dict[str, Any] = {"alone": Q.counts(sig, ps.duplicate).to_dict()}
    variants = [(f"k={k}", res.distance <= k, sig) for k in sorted({*ks, 6, 8, 10, 12})]
    variants.append((f"k={V.LONG_K} verified", (res.distance <= V.LONG_K) & ok, sig & ok))
    for name, sim, extra in variants:
        both = sim | extra
        out[name] = {
            "simhash": Q.counts(sim, ps.duplicate).to_dict(),
            "simhash_or_sentences": Q.counts(both, ps.duplicate).to_dict(),
            "added_tp": int((extra & ~sim & ps.duplicate).sum()),
            "added_fp": int((extra & ~sim & ~ps.duplicate).sum()),
        }
    return out
