"""Detection quality at the level users see: precision, recall and F1 per group.

:mod:`lab.evaluation` ranks fingerprint schemes by ROC AUC. This module
turns fingerprints into *decisions* (is ``b`` a near-duplicate of ``a``?) the
way the store makes them, and counts them per language, pair kind, edit kind
and length band, next to two peers on the same pairs:

- the PyPI ``simhash`` package, ``Simhash(text)`` with its default features
  (lower case, word characters joined, character 4-grams, MD5), Hamming <= k;
- datasketch ``MinHashLSH(threshold=0.8, num_perm=128)`` over the set of
  character 3-grams of the lower-cased word characters (the shingling of its
  docs' examples, on characters so that Chinese works), default hash.

Our decision rule (:func:`decide`) is the store's (:mod:`simhash_pg.verify.rule`),
vectorised: a pair whose shorter side is a short text
(:data:`simhash_pg.verify.SHORT_TEXT_CHARS`) is a duplicate when its Hamming
distance is <= :data:`~simhash_pg.verify.SHORT_K` *and* its verification
similarity (the rule version's, :meth:`VerifyPolicy.similarity`) reaches the
short threshold; a longer pair when its distance is <= k, or, with the
long-text guard, <= ``LONG_K`` and similarity >= the long threshold. The
sentence signature (:mod:`simhash_pg.text.signatures`) can be OR-ed in.

Distances come either from the fingerprints directly (fast path) or from the
store: every text is added with ``add_many(dedup=False)``, each pair's ``a`` is
queried once with ``near_many`` at the largest k any rule needs, and a pair's
store distance is the distance of ``b`` among ``a``'s matches (absent: never
detected). Since ``near`` is exact, ``b`` is among the matches at a smaller k
exactly when that distance is <= k.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lab.evaluation import EvalSet, PairScores, default_eval_dir, load_eval
from simhash_pg import verify as V
from simhash_pg.bits import PIGEONHOLE_K
from simhash_pg.text.schemes import get_scheme
from simhash_pg.text.signatures import SHARED_SENTENCE_CAP, key_holders_found, sentences_meet
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify.jaccard import from_norm_sig

__all__ = [
    "LENGTH_BANDS",
    "NO_MATCH",
    "Counts",
    "PairSet",
    "Rule",
    "best_k",
    "breakdown",
    "counts",
    "decide",
    "edit_kind",
    "fingerprint_distances",
    "length_band",
    "load_pairs",
    "minhash_peer",
    "resolve_eval_dir",
    "signature_matches",
    "simhash_peer_distances",
    "store_distances",
    "sweep",
]

# Bands of the shorter side's verification-text length (letters and digits).
LENGTH_BANDS: tuple[tuple[int, str], ...] = ((50, "<50"), (200, "50-200"), (1000, "200-1000"))
LONG_BAND_MIN = 200
# Distance of a pair that can never match (no fingerprint, or not returned by the store).
NO_MATCH = 99
K_SWEEP = tuple(range(17))

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def resolve_eval_dir(directory: Path | str | None) -> Path:
    """``directory``, or ``shared/eval`` beside the repository; raise if neither exists."""
    d = Path(directory) if directory is not None else default_eval_dir()
    if not (d / "pairs.jsonl").exists() and not (d / "pairs_short.jsonl").exists():
        raise FileNotFoundError(f"no pairs.jsonl or pairs_short.jsonl in {d}; pass --eval-dir")
    return d


def edit_kind(edit: str) -> str:
    """The edit's name: ``format:fullwidth`` -> ``format``, ``combo[...]`` -> ``combo``."""
    return re.split(r"[:\[]", edit, maxsplit=1)[0] or "?"


def length_band(chars: int) -> str:
    for upper, name in LENGTH_BANDS:
        if chars < upper:
            return name
    return f"{LENGTH_BANDS[-1][0]}+"


@dataclass
class PairSet:
    """Labelled pairs with their texts and what the reports group them by."""

    name: str
    texts: dict[str, str]
    vtexts: dict[str, str]
    a: list[str]
    b: list[str]
    duplicate: npt.NDArray[np.bool_]
    lang: npt.NDArray[np.str_]
    kind: npt.NDArray[np.str_]
    edit: npt.NDArray[np.str_]
    length: npt.NDArray[np.int64]  # shorter side's verification-text length

    def __len__(self) -> int:
        return len(self.a)

    @property
    def band(self) -> npt.NDArray[np.str_]:
        return np.array([length_band(int(n)) for n in self.length], dtype=str)

    @property
    def short(self) -> npt.NDArray[np.bool_]:
        return self.length < V.SHORT_TEXT_CHARS

    @property
    def long(self) -> npt.NDArray[np.bool_]:
        return self.length >= LONG_BAND_MIN


def load_pairs(
    directory: Path | str,
    *,
    short: bool,
    sample: int | None = None,
    seed: int = 0,
    scheme: Any = None,
) -> PairSet:
    """Load ``pairs.jsonl`` (or ``pairs_short.jsonl``) and the texts they name.

    Verification texts are made as a store with ``scheme`` makes them.
    """
    es: EvalSet = load_eval(directory, short=short)
    if sample is not None:
        es = es.sample(sample, seed=seed)
    ids = sorted({p["a"] for p in es.pairs} | {p["b"] for p in es.pairs})
    texts = {i: es.texts[i] for i in ids}
    fp = Fingerprinter(scheme)
    vtexts = {i: V.alnum_only(fp.normalize(t)) for i, t in texts.items()}
    ps = es.pairs
    return PairSet(
        name="short" if short else "documents",
        texts=texts,
        vtexts=vtexts,
        a=[p["a"] for p in ps],
        b=[p["b"] for p in ps],
        duplicate=np.array([bool(p["duplicate"]) for p in ps], dtype=bool),
        lang=np.array([p["lang"] for p in ps], dtype=str),
        kind=np.array([p["kind"] for p in ps], dtype=str),
        edit=np.array([edit_kind(str(p.get("edit", ""))) for p in ps], dtype=str),
        length=np.array(
            [min(len(vtexts[p["a"]]), len(vtexts[p["b"]])) for p in ps], dtype=np.int64
        ),
    )


# --------------------------------------------------------------------------
# counting


@dataclass(frozen=True)
class Counts:
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        d = self.tp + self.fp
        return self.tp / d if d else float("nan")

    @property
    def recall(self) -> float:
        d = self.tp + self.fn
        return self.tp / d if d else float("nan")

    @property
    def f1(self) -> float:
        d = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / d if d else float("nan")

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if x != x else round(x, 4)

        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": num(self.precision),
            "recall": num(self.recall),
            "f1": num(self.f1),
        }


def counts(detected: npt.NDArray[np.bool_], duplicate: npt.NDArray[np.bool_]) -> Counts:
    det = np.asarray(detected, dtype=bool)
    dup = np.asarray(duplicate, dtype=bool)
    return Counts(
        tp=int((det & dup).sum()),
        fp=int((det & ~dup).sum()),
        fn=int((~det & dup).sum()),
        tn=int((~det & ~dup).sum()),
    )


def breakdown(detected: npt.NDArray[np.bool_], ps: PairSet) -> dict[str, dict[str, Counts]]:
    """Counts overall and per lang, kind, edit kind and length band."""
    out: dict[str, dict[str, Counts]] = {"all": {"all": counts(detected, ps.duplicate)}}
    for dim, values in (("lang", ps.lang), ("kind", ps.kind), ("edit", ps.edit), ("band", ps.band)):
        out[dim] = {
            str(g): counts(detected[values == g], ps.duplicate[values == g])
            for g in sorted(set(values.tolist()), key=_group_order)
        }
    return out


def _group_order(g: str) -> tuple[int, str]:
    names = [name for _, name in LENGTH_BANDS] + [f"{LENGTH_BANDS[-1][0]}+"]
    return (names.index(g), "") if g in names else (len(names), g)


def sweep(
    distance: npt.NDArray[np.int64],
    duplicate: npt.NDArray[np.bool_],
    ks: Sequence[int] = K_SWEEP,
    *,
    passes: npt.NDArray[np.bool_] | None = None,
) -> dict[int, Counts]:
    """Counts of ``distance <= k`` (and ``passes``, e.g. verification) for every k."""
    extra = np.ones(len(distance), dtype=bool) if passes is None else passes
    return {k: counts((distance <= k) & extra, duplicate) for k in ks}


def best_k(table: dict[int, Counts], min_precision: float = 0.97) -> dict[str, Any]:
    """The k of best F1 (smallest on ties) and the largest k with precision >= target."""
    ks = sorted(table)
    by_f1 = max(ks, key=lambda k: (np.nan_to_num(table[k].f1, nan=-1.0), -k))
    ok = [k for k in ks if table[k].tp and table[k].precision >= min_precision]
    return {
        "best_f1_k": by_f1,
        "best_f1": table[by_f1].to_dict(),
        "precision_target": min_precision,
        "max_k_at_precision": max(ok) if ok else None,
        "at_precision": table[max(ok)].to_dict() if ok else None,
    }


# --------------------------------------------------------------------------
# signals per pair


def _popcount(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    return np.unpackbits(x.astype("<u8").view(np.uint8)).reshape(-1, 64).sum(axis=1)


def _distances_of(fps: dict[str, int | None], ps: PairSet) -> npt.NDArray[np.int64]:
    ok = np.array(
        [
            fps.get(a) is not None and fps.get(b) is not None
            for a, b in zip(ps.a, ps.b, strict=True)
        ],
        dtype=bool,
    )
    fa = np.array([fps.get(a) or 0 for a in ps.a], dtype=np.uint64)
    fb = np.array([fps.get(b) or 0 for b in ps.b], dtype=np.uint64)
    dist = _popcount(np.bitwise_xor(fa, fb)) if len(ps) else np.zeros(0, dtype=np.int64)
    return np.where(ok, dist, NO_MATCH).astype(np.int64)


def fingerprints(
    ps: PairSet, scheme: Any = None, workers: int | None = None
) -> dict[str, int | None]:
    """Fingerprint of every text of the set (None: the text has no features)."""
    fp = Fingerprinter(scheme)
    ids = sorted(ps.texts)
    return dict(
        zip(
            ids,
            fp.fingerprint_many([ps.texts[i] for i in ids], workers=workers, on_error="none"),
            strict=True,
        )
    )


def fingerprint_distances(
    ps: PairSet, scheme: Any = None, workers: int | None = None
) -> npt.NDArray[np.int64]:
    """Hamming distance of every pair (:data:`NO_MATCH` for a featureless text)."""
    return _distances_of(fingerprints(ps, scheme, workers), ps)


def similarities(ps: PairSet, rule: int = V.RULE_VERSION) -> npt.NDArray[np.float64]:
    """Verification similarity of every pair, as rule version ``rule`` measures it."""
    v = ps.vtexts
    measure = V.VerifyPolicy(rule=rule).text_rule.similarity
    return np.array(
        [measure(v[a], v[b]) for a, b in zip(ps.a, ps.b, strict=True)], dtype=np.float64
    )


def signature_matches(
    ps: PairSet, distance: npt.NDArray[np.int64], scheme: Any = None,
) -> npt.NDArray[np.bool_]:
    """Whether the two sides' sentence keys meet (:func:`sentences_meet`): the same
    n-longest-sentences signature, a sentence hash in common, or a min-hash key
    in common within :data:`MINHASH_CAP` bits (``distance``: the pairs').

    As in a store holding every text of the set once, added in the order of
    their ids: a key finds its holders by the look-up's rule
    (:func:`key_holders_found`, ``simhash_sentence_matches``): all of at most
    16, the 16 nearest the query of at most 256, none of more.
    """
    fp = Fingerprinter(scheme)
    keys = {}
    minhash: dict[Any, tuple[int, ...]] = {}
    ids = sorted(ps.texts)
    fps = dict(zip(ids, fp.fingerprint_many([ps.texts[i] for i in ids]), strict=True))
    row = {i: n + 1 for n, i in enumerate(ids)}  # the store's ids, in the order added
    for i, t in ps.texts.items():
        vt = from_norm_sig(fp.normalize(t))  # what a writer keeps and a query looks up
        keys[i], minhash[i] = (vt.sig, vt.hashes), vt.minhash
    held: dict[int, list[Any]] = {}
    for i, (_, hs) in keys.items():
        for h in set(hs):
            held.setdefault(h, []).append(i)
    found: dict[tuple[int, Any], set[int]] = {}

    def finds(h: int, a: Any, b: Any) -> bool:
        """Whether key ``h``, looked up by ``a``, finds ``b``."""
        if len(held[h]) <= SHARED_SENTENCE_CAP:
            return True
        if (h, a) not in found:
            found[h, a] = set(key_holders_found(
                ((row[i], fps[i]) for i in held[h] if fps[i] is not None), fps[a]))
        return row[b] in found[h, a]

    out = []
    for a, b, d in zip(ps.a, ps.b, distance, strict=True):
        (sig_a, hs_a), (sig_b, hs_b) = keys[a], keys[b]
        meeting = tuple(h for h in set(hs_a).intersection(hs_b) if finds(h, a, b))
        out.append(sentences_meet(sig_a, meeting, sig_b, hs_b, minhash[a], int(d)))
    return np.array(out, dtype=bool)


def simhash_peer_distances(ps: PairSet) -> npt.NDArray[np.int64]:
    """Hamming distances under the PyPI ``simhash`` package's defaults."""
    from simhash import Simhash

    fps: dict[str, int | None] = {i: int(Simhash(t).value) for i, t in ps.texts.items()}
    return _distances_of(fps, ps)


_PEER_WORD = re.compile(r"\w+")


def _peer_shingles(text: str, n: int = 3) -> set[bytes]:
    s = "".join(_PEER_WORD.findall(text.lower()))
    return {s[i : i + n].encode("utf-8") for i in range(max(len(s) - n + 1, 1))}


def minhash_peer(ps: PairSet, threshold: float = 0.8, num_perm: int = 128) -> npt.NDArray[np.bool_]:
    """Whether datasketch ``MinHashLSH`` returns ``b`` for a query with ``a``."""
    from datasketch import MinHash, MinHashLSH

    ids = sorted(ps.texts)
    hashes = MinHash.bulk([_peer_shingles(ps.texts[i]) for i in ids], num_perm=num_perm)
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    with lsh.insertion_session() as session:
        for i, m in zip(ids, hashes, strict=True):
            session.insert(i, m, check_duplication=False)
    by_id = dict(zip(ids, hashes, strict=True))
    found: dict[str, set[str]] = {}
    for a in set(ps.a):
        found[a] = set(lsh.query(by_id[a]))
    return np.array([b in found[a] for a, b in zip(ps.a, ps.b, strict=True)], dtype=bool)


def store_distances(
    sets: Sequence[PairSet],
    store: Any,
    k: int,
    *,
    batch_size: int = 2000,
    progress: Progress = _quiet,
) -> list[npt.NDArray[np.int64]]:
    """Distances as the store reports them, for every pair of every set.

    ``store`` is an open, empty :class:`simhash_pg.store.SimhashStore`. All
    texts go in with ``add_many(dedup=False)`` keyed by their eval id; each
    distinct ``a`` is queried by its text with ``near_many(k=k)``.
    """
    from simhash_pg.store import Doc

    texts: dict[str, str] = {}
    for ps in sets:
        texts.update(ps.texts)
    ids = sorted(texts)
    progress(f"store: add_many of {len(ids)} documents")
    store.add_many((Doc(texts[i], key=i) for i in ids), dedup=False, batch_size=batch_size)
    out: list[npt.NDArray[np.int64]] = []
    for ps in sets:
        queries = sorted(set(ps.a))
        progress(f"store: near_many for {len(queries)} {ps.name} queries at k={k}")
        results = store.near_many([texts[q] for q in queries], k=k)
        found = {
            q: {str(m.key): int(m.distance) for m in matches}
            for q, matches in zip(queries, results, strict=True)
        }
        out.append(
            np.array(
                [found[a].get(b, NO_MATCH) for a, b in zip(ps.a, ps.b, strict=True)],
                dtype=np.int64,
            )
        )
    return out


def store_decisions(
    sets: Sequence[PairSet], store: Any, k: int, *, progress: Progress = _quiet
) -> list[npt.NDArray[np.bool_]]:
    """Which pairs the store itself calls near-duplicates: ``b`` in ``near_many(a)``.

    ``store`` holds every text keyed by its eval id (see :func:`store_distances`)
    and verifies as its ``verify`` mode says: this measures what users get,
    verification included.
    """
    out: list[npt.NDArray[np.bool_]] = []
    for ps in sets:
        queries = sorted(set(ps.a))
        progress(f"store: near_many for {len(queries)} {ps.name} queries, "
                 f"verify={store.verify} k={k}")
        texts = ps.texts
        results = store.near_many([texts[q] for q in queries], k=k)
        found = {q: {str(m.key) for m in ms} for q, ms in zip(queries, results, strict=True)}
        out.append(np.array([b in found[a] for a, b in zip(ps.a, ps.b, strict=True)],
                            dtype=bool))
    return out


# --------------------------------------------------------------------------
# decisions


@dataclass(frozen=True)
class Rule:
    """How simhash-pg decides, as a store configured this way would."""

    k: int = 3
    short_verify: bool = True
    short_k: int = V.SHORT_K
    long_verify: bool = False
    long_k: int = V.LONG_K
    sentences: bool = False
    rule: int = V.RULE_VERSION  # the duplicate rule's version (its similarity)
    # long text queries under "all" search by margin-ranked probes, as the
    # store does (None: by radius long_k, the rule before probes)
    probe_t: int | None = V.PROBE_T
    probe_cap: int = V.PROBE_CAP

    def label(self) -> str:
        """The row name: the store's verify mode (see :func:`simhash_pg.verify.accept`)."""
        if self.long_verify and self.probe_t is not None:
            name = (f"simhash-pg verify=all probes T={self.probe_t} cap {self.probe_cap}"
                    f" (long texts: pairs of {V.PROBE_PAIRS}, {V.PROBE_LEAD} leading)")
        elif self.long_verify:
            name = f"simhash-pg verify=all k={self.long_k}"
        elif self.short_verify:
            name = f"simhash-pg verify=short k={self.k}"
        else:
            name = f"simhash-pg verify=off k={self.k}"
        if self.sentences:
            name += " +sentences" if self.long_verify else " +sentences(unverified)"
        return name

    def __post_init__(self) -> None:
        if self.long_verify and not self.short_verify:
            raise ValueError("a rule that verifies long texts verifies short ones too "
                             "(as verify mode 'all' does)")

    @property
    def policy(self) -> V.VerifyPolicy:
        """The store's verify policy this rule is, with its k and signature choices."""
        mode: V.VerifyMode = ("all" if self.long_verify
                              else "short" if self.short_verify else "off")
        return V.VerifyPolicy(mode, short_k=self.short_k, long_k=self.long_k,
                              signature=self.sentences, rule=self.rule,
                              probe_t=self.probe_t, probe_cap=self.probe_cap)

    @property
    def max_k(self) -> int:
        ks = [self.k]
        if self.short_verify:
            ks.append(max(self.short_k, self.k))
        if self.long_verify:
            ks.append(self.long_k)
            if self.probe_t is not None:
                ks.append(self.probe_cap)
        return max(ks)


def decide(
    rule: Rule,
    distance: npt.NDArray[np.int64],
    similarity: npt.NDArray[np.float64],
    short: npt.NDArray[np.bool_],
    sentences: npt.NDArray[np.bool_] | None = None,
    queries: Sequence[str] | None = None,
    probe_hit: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.bool_]:
    """Which pairs ``rule`` calls near-duplicates: the store's look-up and rule, vectorised.

    The model of the store's decision (:meth:`simhash_pg.verify.VerifyPolicy.accept`):
    each pair meets the policy's :meth:`~simhash_pg.verify.VerifyPolicy.test`
    of its kind (a short side or two long texts; searched by probes or by
    radius), judged as the store judges one pair
    (:meth:`simhash_pg.verify.PairTest.judge`). ``similarity`` is the
    policy's text rule's of each pair; ``sentences``: the pair's sentence
    keys meet (an equal sentence signature makes a long pair a candidate,
    verified like any other under the long-text guard).

    ``queries`` (each pair's ``a`` as verification text) and ``probe_hit``
    (:func:`probe_hits`: one of ``b``'s block values is among ``a``'s probe
    values) are needed when the rule probes: which queries the store searches
    by probes, and what they reach. A probed query finds a candidate only by a
    probe hit within the cap, or by its signature. Without them, every query
    is searched by radius.
    """
    p = rule.policy
    pr = np.zeros(distance.shape, dtype=bool)
    if p.probes_texts and rule.k <= PIGEONHOLE_K:
        if queries is None:
            raise ValueError(f"{rule.label()} probes long queries: give queries and probe_hit")
        pr = np.array([p.probe_budget(q, rule.k) is not None for q in queries], dtype=bool)
    sig = np.zeros(distance.shape, dtype=bool) if sentences is None else sentences
    if pr.any() and probe_hit is None:
        raise ValueError("probed pairs need probe_hit (is the candidate among the probes?)")
    out = np.zeros(distance.shape, dtype=bool)
    for side in (True, False):
        for by_probes in (False, True):
            passed = p.test(rule.k, side, by_probes).judge(distance, sig, lambda: similarity)
            out = np.where((short == side) & (pr == by_probes), passed, out)
    if probe_hit is not None:
        within = probe_hit & (distance <= max(rule.k, p.probe_cap))
        out &= ~pr | within | (sig & bool(p.signature))
    return out


def probe_hits(
    ps: PairSet, scheme: Any = None, t: int = V.PROBE_T, workers: int | None = None,
    pairs: int | None = V.PROBE_PAIRS, lead: int | None = V.PROBE_LEAD,
) -> npt.NDArray[np.bool_]:
    """Whether ``a``'s probes reach ``b``'s fingerprint (before the cap), as the store
    searches (:func:`simhash_pg.text.probes.probe_hits`).

    The probe values are the store's: ``t`` per block
    (``Fingerprinter.fingerprint_many_probes``), fewer where ``a``'s keys take
    part of the look-up budget (``VerifyPolicy.probe_count``); a long text
    probes ``pairs`` values per block by pairs of blocks (``VerifyPolicy.probes_pairs``;
    None: single blocks, a store made before revision 0019), the first ``lead`` of
    block i's leading each pair (None: all, a store made before revision 0024).
    """
    from simhash_pg.bits import blocks_array
    from simhash_pg.text.probes import probe_hits as reach

    policy = V.VerifyPolicy("all", probe_t=t, probe_pairs=pairs, probe_lead=lead)
    fper = Fingerprinter(scheme)
    ids = sorted(ps.texts)
    got = fper.fingerprint_many_probes([ps.texts[i] for i in ids], V.alnum_only,
                                       policy.probe_depth, workers)
    probes: dict[Any, Any] = {}
    by_pairs: dict[Any, bool] = {}
    for i, (_, vtext, pr) in zip(ids, got, strict=True):
        if pr is not None and vtext is not None:
            sig, hashes = V.sentence_keys(fper.normalize(ps.texts[i]), vtext)
            pr = policy.with_probes(V.VText(vtext, sig, hashes=hashes), pr).probes
            by_pairs[i] = policy.probes_pairs(vtext)
        probes[i] = pr
    fps = {i: fp for i, (fp, _, _) in zip(ids, got, strict=True)}
    out = np.zeros(len(ps), dtype=bool)
    for n, (a, b) in enumerate(zip(ps.a, ps.b, strict=True)):
        pa, fa, fb = probes[a], fps[a], fps[b]
        if pa is None or fa is None or fb is None:
            continue
        out[n] = bool(reach(fa, pa, blocks_array([fb]), pairs=by_pairs[a], lead=lead)[0])
    return out


# --------------------------------------------------------------------------
# a whole run


@dataclass
class SetResult:
    pairs: PairSet
    distance: npt.NDArray[np.int64]
    similarity: npt.NDArray[np.float64]
    sentences: npt.NDArray[np.bool_]
    probe_hit: npt.NDArray[np.bool_]  # b among a's probe values (probe_hits)
    store_distance: npt.NDArray[np.int64] | None = None
    other_schemes: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)
    peer_simhash: npt.NDArray[np.int64] | None = None
    peer_minhash: npt.NDArray[np.bool_] | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def queries(self) -> list[str]:
        """Each pair's ``a`` as verification text: what the store's look-up is asked with."""
        return [self.pairs.vtexts[a] for a in self.pairs.a]


def measure_set(
    ps: PairSet,
    schemes: Sequence[Any],
    *,
    peers: bool,
    workers: int | None = None,
    progress: Progress = _quiet,
    rule: int = V.RULE_VERSION,
) -> SetResult:
    """Every signal the reports need for one pair set (the store path comes later).

    Similarities are rule version ``rule``'s: every :class:`Rule` decided on
    them must have that version.
    """
    secs: dict[str, float] = {}

    def timed(what: str, fn: Callable[[], Any]) -> Any:
        progress(f"{ps.name}: {what}")
        t = time.perf_counter()
        try:
            return fn()
        finally:
            secs[what] = round(time.perf_counter() - t, 2)

    first, *rest = schemes
    dist = timed(
        f"fingerprints {get_scheme(first).name}",
        lambda: fingerprint_distances(ps, first, workers),
    )
    res = SetResult(
        ps,
        dist,
        timed("verification", lambda: similarities(ps, rule)),
        timed("sentence signatures", lambda: signature_matches(ps, dist, first)),
        timed("probe values", lambda: probe_hits(ps, first, V.PROBE_T, workers)),
    )
    for s in rest:
        res.other_schemes[str(s)] = timed(
            f"fingerprints {s}", functools.partial(fingerprint_distances, ps, s, workers)
        )
    if peers:
        res.peer_simhash = timed("peer simhash", lambda: simhash_peer_distances(ps))
        res.peer_minhash = timed("peer MinHashLSH", lambda: minhash_peer(ps))
    res.seconds = secs
    return res


def scheme_label(scheme: Any) -> str:
    return get_scheme(scheme).to_json()


def systems(
    res: SetResult, rules: Iterable[Rule], peer_ks: Sequence[int], *, via_store: bool
) -> dict[str, npt.NDArray[np.bool_]]:
    """Decisions of every system on one set, by display name."""
    ps = res.pairs
    dist = res.store_distance if via_store and res.store_distance is not None else res.distance
    out: dict[str, npt.NDArray[np.bool_]] = {}
    for r in rules:
        out[r.label()] = decide(r, dist, res.similarity, ps.short, res.sentences,
                                res.queries, res.probe_hit)
    if res.peer_simhash is not None:
        for k in peer_ks:
            out[f"simhash (PyPI) k={k}"] = res.peer_simhash <= k
    if res.peer_minhash is not None:
        out["MinHashLSH t=0.8 p=128"] = res.peer_minhash
    return out


def histogram(
    distance: npt.NDArray[np.int64], duplicate: npt.NDArray[np.bool_]
) -> dict[str, list[int]]:
    """Pairs at each distance 0..64, duplicates and non-duplicates apart.

    Pairs without a distance (:data:`NO_MATCH`) are left out.
    """

    def at(mask: npt.NDArray[np.bool_]) -> list[int]:
        d = distance[mask & (distance <= 64)]
        return [int(c) for c in np.bincount(d, minlength=65)]

    return {"duplicate": at(duplicate), "non_duplicate": at(~duplicate)}


def auc_of(
    distance: npt.NDArray[np.int64],
    duplicate: npt.NDArray[np.bool_],
    lang: npt.NDArray[np.str_],
    kind: npt.NDArray[np.str_],
) -> float:
    return PairScores(distance=distance, duplicate=duplicate, lang=lang, kind=kind).auc()


def misses(
    detected: npt.NDArray[np.bool_], ps: PairSet, limit: int = 8
) -> dict[str, list[dict[str, Any]]]:
    """A few false negatives and false positives, by id (texts stay in the eval set)."""

    def rows(mask: npt.NDArray[np.bool_]) -> list[dict[str, Any]]:
        idx = np.flatnonzero(mask)[:limit]
        return [
            {
                "a": ps.a[i],
                "b": ps.b[i],
                "kind": str(ps.kind[i]),
                "edit": str(ps.edit[i]),
                "chars": int(ps.length[i]),
            }
            for i in idx
        ]

    return {
        "false_negatives": rows(~detected & ps.duplicate),
        "false_positives": rows(detected & ~ps.duplicate),
    }
