"""Measure a fingerprint scheme on a labelled near-duplicate set.

The set's format is the one of ``../shared/eval`` (see its README): JSON Lines
text files ``{"id", "lang", "text", ...}`` and pair files ``{"a", "b",
"duplicate", "lang", "kind", ...}``. The figure of merit is the ROC AUC of the
negated Hamming distance over the labelled pairs: the probability that a
random duplicate pair is closer than a random non-duplicate pair (ties count
one half).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from simhash_pg.bits import hamming_array
from simhash_pg.text.simhash import Fingerprinter

__all__ = [
    "LONG_TEXT_FILES",
    "SHORT_TEXT_FILES",
    "EvalSet",
    "PairScores",
    "auc",
    "default_eval_dir",
    "load_eval",
    "score_pairs",
]

LONG_TEXT_FILES = (
    "corpus_zh.jsonl",
    "corpus_en.jsonl",
    "variants.jsonl",
    "docs_versions.jsonl",
    "docs_licenses.jsonl",
)
SHORT_TEXT_FILES = ("titles.jsonl", "short_variants.jsonl")


def default_eval_dir() -> Path:
    """``shared/eval`` beside the repository checkout (may not exist)."""
    return Path(__file__).resolve().parents[2] / "shared" / "eval"


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


@dataclass
class EvalSet:
    texts: dict[str, str]
    pairs: list[dict[str, Any]]

    def sample(self, n: int, seed: int = 0) -> EvalSet:
        """A random subset of ``n`` pairs, stratified by (lang, duplicate)."""
        if n >= len(self.pairs):
            return self
        rng = random.Random(seed)
        groups: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        for p in self.pairs:
            groups.setdefault((p["lang"], p["duplicate"]), []).append(p)
        picked: list[dict[str, Any]] = []
        for key in sorted(groups):
            g = groups[key]
            k = max(1, round(n * len(g) / len(self.pairs)))
            picked.extend(rng.sample(g, min(k, len(g))))
        return EvalSet(self.texts, picked)


def load_eval(directory: Path | str | None = None, *, short: bool = False) -> EvalSet:
    """Load the document pairs (or, with ``short``, the title pairs) and their texts."""
    d = Path(directory) if directory is not None else default_eval_dir()
    pairs = list(_jsonl(d / ("pairs_short.jsonl" if short else "pairs.jsonl")))
    needed = {p["a"] for p in pairs} | {p["b"] for p in pairs}
    texts: dict[str, str] = {}
    for name in SHORT_TEXT_FILES if short else LONG_TEXT_FILES:
        path = d / name
        if path.exists():
            for rec in _jsonl(path):
                if rec["id"] in needed:
                    texts[rec["id"]] = rec["text"]
    pairs = [p for p in pairs if p["a"] in texts and p["b"] in texts]
    return EvalSet(texts, pairs)


def auc(scores_pos: npt.ArrayLike, scores_neg: npt.ArrayLike) -> float:
    """ROC AUC by Mann-Whitney U with average ranks for ties (higher = positive)."""
    pos = np.asarray(scores_pos, dtype=np.float64)
    neg = np.asarray(scores_neg, dtype=np.float64)
    if not len(pos) or not len(neg):
        return float("nan")
    allv = np.concatenate([pos, neg])
    order = np.argsort(allv, kind="mergesort")
    sorted_v = allv[order]
    ranks = np.empty(len(allv), dtype=np.float64)
    # Average rank within each run of equal values.
    bounds = np.flatnonzero(np.diff(sorted_v)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(allv)]])
    avg = (starts + ends + 1) / 2.0  # 1-based mean of ranks start+1..end
    ranks[order] = np.repeat(avg, ends - starts)
    u = ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2.0
    return float(u / (len(pos) * len(neg)))


@dataclass
class PairScores:
    """Hamming distances of labelled pairs, with what to report about them."""

    distance: npt.NDArray[np.int64]
    duplicate: npt.NDArray[np.bool_]
    lang: npt.NDArray[np.str_]
    kind: npt.NDArray[np.str_]
    failed: int = 0

    def subset(self, mask: npt.NDArray[np.bool_]) -> PairScores:
        return PairScores(
            self.distance[mask], self.duplicate[mask], self.lang[mask], self.kind[mask]
        )

    def by_lang(self, lang: str) -> PairScores:
        return self.subset(self.lang == lang)

    def auc(self) -> float:
        d = -self.distance
        return auc(d[self.duplicate], d[~self.duplicate])

    def percentiles(
        self, duplicate: bool, qs: Sequence[int] = (5, 25, 50, 75, 95)
    ) -> dict[int, float]:
        d = self.distance[self.duplicate == duplicate]
        if not len(d):
            return {}
        return {q: float(np.percentile(d, q)) for q in qs}

    def histogram(
        self, duplicate: bool, edges: Sequence[int] = (0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 65)
    ) -> list[tuple[str, int]]:
        d = self.distance[self.duplicate == duplicate]
        counts, _ = np.histogram(d, bins=np.asarray(edges))
        labels = [f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b in itertools.pairwise(edges)]
        return list(zip(labels, (int(c) for c in counts), strict=True))

    def recall_fp(self, k: int = 3) -> tuple[float, int, int]:
        """(recall of duplicates, false positives, non-duplicates) at distance <= k."""
        near = self.distance <= k
        dups = int(self.duplicate.sum())
        recall = float((near & self.duplicate).sum() / dups) if dups else float("nan")
        return recall, int((near & ~self.duplicate).sum()), int((~self.duplicate).sum())

    def report(self, title: str = "") -> str:
        lines = [title] if title else []
        for lang in ["all", *sorted(set(self.lang.tolist()))]:
            s = self if lang == "all" else self.by_lang(lang)
            r, fp, nn = s.recall_fp(3)
            lines.append(
                f"  {lang:>3}: AUC {s.auc():.4f}  pairs {len(s.distance)}  "
                f"k<=3 recall {r:.3f} FP {fp}/{nn}"
            )
            for dup in (True, False):
                pct = " ".join(f"p{q}={v:g}" for q, v in s.percentiles(dup).items())
                hist = " ".join(f"{lab}:{c}" for lab, c in s.histogram(dup))
                lines.append(f"       {'dup' if dup else 'non'} {pct} | {hist}")
            lines.append(
                "       recall/FP by k: "
                + " ".join(
                    f"{k}:{r:.2f}/{fp}" for k in range(0, 13) for r, fp, _ in [s.recall_fp(k)]
                )
            )
        return "\n".join(lines)


def score_pairs(
    fingerprinter: Fingerprinter,
    evalset: EvalSet,
    *,
    workers: int | None = None,
) -> PairScores:
    """Fingerprint every text a pair needs and return the pairs' distances.

    A text without features fails its pairs; they are left out and counted.
    """
    ids = sorted({p["a"] for p in evalset.pairs} | {p["b"] for p in evalset.pairs})
    fps = fingerprinter.fingerprint_many(
        [evalset.texts[i] for i in ids], workers=workers, on_error="none"
    )
    fp_of = dict(zip(ids, fps, strict=True))
    rows = [
        (fp_of[p["a"]], fp_of[p["b"]], p["duplicate"], p["lang"], p["kind"]) for p in evalset.pairs
    ]
    ok = [r for r in rows if r[0] is not None and r[1] is not None]
    a = np.array([r[0] for r in ok], dtype=np.uint64)
    b = np.array([r[1] for r in ok], dtype=np.uint64)
    dist = hamming_array(a, b)
    return PairScores(
        distance=dist.astype(np.int64),
        duplicate=np.array([r[2] for r in ok], dtype=bool),
        lang=np.array([r[3] for r in ok], dtype=str),
        kind=np.array([r[4] for r in ok], dtype=str),
        failed=len(rows) - len(ok),
    )

