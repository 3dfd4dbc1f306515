"""Per-candidate cost of rule 2's overlap against rule 1's Jaccard, side by side.

    uv run python -m lab.experiments.overlap_cost [--eval-dir ../shared/eval]

400 sampled pairs of each set (their verification texts, as a store keeps
them), each measure timed over all pairs, best of 7 rounds, alternating.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lab import quality as Q
from simhash_pg.verify import VerifyPolicy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--eval-dir", type=Path, default=None)
    ap.add_argument("--pairs", type=int, default=400)
    args = ap.parse_args()
    eval_dir = Q.resolve_eval_dir(args.eval_dir)
    measures = {r: VerifyPolicy("all", rule=r).text_rule.similarity for r in (1, 2)}
    for short in (False, True):
        ps = Q.load_pairs(eval_dir, short=short, sample=args.pairs, seed=3)
        pairs = [(ps.vtexts[a], ps.vtexts[b]) for a, b in zip(ps.a, ps.b, strict=True)]
        best = dict.fromkeys(measures, float("inf"))
        for _ in range(7):
            for rule, f in measures.items():
                t = time.perf_counter()
                for a, b in pairs:
                    f(a, b)
                best[rule] = min(best[rule], (time.perf_counter() - t) / len(pairs) * 1e6)
        med = sorted(len(a) for a, _ in pairs)[len(pairs) // 2]
        print(f"{'titles' if short else 'documents'} (median {med} chars): Jaccard "
              f"{best[1]:.0f} us, overlap {best[2]:.0f} us per pair, ratio {best[2] / best[1]:.2f}")


if __name__ == "__main__":
    main()
