"""The eval's labelled pairs in an empty store and in one that already holds N realistic rows.

Issue 28, item 5 ("quality at scale"): a key (sentence hash, min-hash key,
title key) held by more than ``SHARED_SENTENCE_CAP`` = 16 rows finds nothing
(``simhash_sentence_matches``). In an empty store only the eval's own texts
count towards that cap; in a big one, other rows hold the same footer or
byline sentence, the same common 8-gram as a min-hash key, and the eval's
keys pass the cap. This measures what that costs, in one run on one
throwaway server (or ``--dsn``, whose database it EMPTIES):

(a) every text of ``../shared/eval`` (documents and titles) added under
    ``verify="all"`` (as ``lab.experiments.probe_budget --store``), and the
    pairs asked through the store's own ``near_many``;
(b) then ``--background`` N synthetic news rows (lab/bench/rows.py, as
    ``bench scale`` lays them out: two days, 10% near copies, ``--boilerplate``
    of them holding one of 50 shared keys of their own), of which a share
    (``--plant-share``, 5%) hold, in place of one of their keys, a key that
    eval texts hold: each of ``--planted-keys`` such keys spread over
    background rows by Zipf popularity (``--zipf`` s = 1: the most held on
    thousands of rows, most on 3-40), in random order over two kinds of key:

    - *cross-family*: every key that eval texts of two or more unrelated
      families hold (families: the connected parts of the eval's pair graph;
      a sentence or min-hash key shared across unrelated articles is what a
      footer, a byline or a common phrase makes);
    - *random*: the rest, a uniform sample of the eval texts' other sentence
      hashes and min-hash keys (an article's own sentence quoted elsewhere).

    The pairs are asked again through ``near_many``.

It reports P/R/F1 of documents and titles in (a) and (b), the duplicates
found by a key alone / a probe alone / both, and every pair (b) loses: its
kind, its distance, and whether the only key that found it got capped (and
by which planted key). Then a model of the store's look-up
(``lab.quality.decide`` with the key candidates of a cap rule; checked equal
to the store's answers under today's rule) gives P/R of other cap rules on
(b)'s store: a larger cap, and "a key held by more than 16 rows finds its 16
holders nearest the query" (reading at most ``scan`` holders), with what each
costs per query: key index entries read and key candidates verified.

Run from the repository root:

    uv run python -m lab.experiments.quality_at_scale --background 1000000
    uv run python -m lab.experiments.quality_at_scale --background 20000 --limit 500

The background is filled by ``copy_rows(keys_in_bulk=True)``; should it
leave an index invalid (before aefa976 it rebuilt each from
``pg_get_indexdef``, ``CREATE INDEX ... ON ONLY``: no partition got one),
:func:`repair_indexes` builds it again on every partition and says so.

Findings, ``--background 1000000`` (5% of the rows hold one of 2,000 eval
keys; 308 s): 500 more eval keys over the cap (563 in all; the most held
planted key on 6,164 rows), 2,830 of 12,675 eval texts holding one (1,524
in the empty store). Documents R 0.9875 -> 0.9867 (3,713 -> 3,710 of 3,760,
P 1.0000 in both), titles unchanged (F1 0.9948): the three pairs lost are
SPDX licence variants found by one min-hash key alone, held by 12-13 licence
texts in the empty store and by 17 with the background (cross-family keys);
every news pair whose key was capped still meets by another key or a probe
(key-only documents by 3+ keys: 92 -> 86, probe-only 42 -> 48). The target
(P >= 0.999, R >= 0.985) holds, 0.0017 above the bar. The cap costs more in
the empty store than the background adds: in the model (equal to the
store's answers on every pair in both stores), "a key held by more than 16
rows finds its 16 holders nearest the query, if it has at most 256" finds
the three again and gives documents R 0.9928 in both stores, at most 16
candidates per key as today (29.2 key candidates per query against 22.6,
52.6 key index entries read against 29.7); cap 64 gives R 0.9949 with up to
169 candidates per query. At 20k rows with half of them planted: no pair lost.

Since revision 0018 the store runs that rule ("nearest 16 of <= 256" in the
model's table; its "cap 16 (today)" row is the rule before 0018). Run again
(``--background 1000000``, 1,032 s on a loaded machine): documents P 1.0000,
R 0.9928 in both stores (3,733 of 3,760), titles unchanged (R 0.9896); no
duplicate of (a) lost in (b). docs/quality.md, "Keys in a big store".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from lab import quality as Q
from lab.connect import connect as store_connect
from lab.experiments.margin_probes import BoolA, table
from lab.experiments.probe_budget import K, Measured, Setting, add_texts, measure
from simhash_pg.text.signatures import (
    MINHASH_CAP,
    SHARED_SENTENCE_CAP,
    sentence_keys_normalized,
)
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify.jaccard import from_norm_sig

CAP = SHARED_SENTENCE_CAP
BACKGROUND = 1_000_000
PLANT_SHARE = 0.05
PLANTED_KEYS = 2000
ZIPF = 1.0
BOILERPLATE = 0.2  # bench scale's default: rows holding one of rows.py's 50 shared keys
MIN_DOC_RECALL = 0.985
MIN_DOC_PRECISION = 0.999

Log = Callable[[str], None]


# ---------------------------------------------------------------- the eval's keys


@dataclass
class EvalKeys:
    """Every eval text's keys, as a store under ``verify="all"`` keeps and looks them up."""

    sig: dict[str, int | None] = field(default_factory=dict)
    hashes: dict[str, frozenset[int]] = field(default_factory=dict)
    minhash: dict[str, frozenset[int]] = field(default_factory=dict)
    kind: dict[int, str] = field(default_factory=dict)  # sentence / min-hash / title
    holders: dict[int, set[str]] = field(default_factory=dict)  # eval texts holding a key

    def holding(self, keys: set[int]) -> set[str]:
        """The eval texts that hold one of ``keys``."""
        return {i for h in keys & self.holders.keys() for i in self.holders[h]}


def eval_keys(texts: dict[str, str]) -> EvalKeys:
    fp = Fingerprinter()
    out = EvalKeys()
    for i, text in texts.items():
        norm = fp.normalize(text)
        vt = from_norm_sig(norm)  # what a writer keeps and a query looks up
        sentences = set(sentence_keys_normalized(norm)[1])
        out.sig[i], out.hashes[i], out.minhash[i] = vt.sig, frozenset(vt.hashes), frozenset(
            vt.minhash)
        for h in vt.hashes:
            out.holders.setdefault(h, set()).add(i)
            out.kind[h] = ("sentence" if h in sentences else
                           "min-hash" if h in vt.minhash else "title")
    return out


def families(sets: Sequence[Q.PairSet]) -> dict[str, str]:
    """Each text's family: the connected part of the graph of every pair (labelled either way)."""
    parent: dict[str, str] = {i: i for ps in sets for i in ps.texts}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for ps in sets:
        for a, b in zip(ps.a, ps.b, strict=True):
            parent[find(a)] = find(b)
    return {i: find(i) for i in parent}


@dataclass(frozen=True)
class Planted:
    """Eval keys spread over background rows, in Zipf rank order, and their kinds."""

    keys: npt.NDArray[np.int64]
    category: list[str]  # cross-family / random
    weights: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.keys)


def choose_planted(ek: EvalKeys, fam: dict[str, str], count: int, zipf: float,
                   seed: int) -> Planted:
    """Every cross-family key (up to ``count``, most families first) and a uniform sample
    of the other sentence and min-hash keys up to ``count``; ranks shuffled."""
    rng = np.random.default_rng([seed, 28, 5])
    spread = {h: len({fam[i] for i in s}) for h, s in ek.holders.items()}
    cross = sorted((h for h, n in spread.items() if n >= 2), key=lambda h: (-spread[h], h))
    cross = cross[:count]
    taken = set(cross)
    others = sorted(h for h in ek.holders if h not in taken and ek.kind[h] != "title")
    n_random = min(max(0, count - len(cross)), len(others))
    sample = [others[j] for j in rng.choice(len(others), size=n_random, replace=False)]
    pool = [(h, "cross-family") for h in cross] + [(h, "random") for h in sample]
    order = rng.permutation(len(pool))
    pool = [pool[j] for j in order]
    w = 1 / np.arange(1, len(pool) + 1, dtype=np.float64) ** zipf
    return Planted(np.array([h for h, _ in pool], dtype=np.int64), [c for _, c in pool],
                   w / w.sum() if len(w) else w)


# ---------------------------------------------------------------- the store

_PLANT = """
UPDATE simhash_documents d
SET sentence_hashes = ARRAY(
    SELECT u.x FROM unnest(d.sentence_hashes) WITH ORDINALITY AS u (x, o)
    WHERE u.o <> 1 + p.slot %% cardinality(d.sentence_hashes)
    UNION SELECT p.key ORDER BY 1)
FROM unnest(%s::bigint[], %s::bigint[], %s::integer[]) AS p (id, key, slot)
WHERE d.id = p.id AND cardinality(d.sentence_hashes) > 0
"""


def plant(conn: psycopg.Connection[Any], planted: Planted, first: int, last: int,
          share: float, seed: int) -> int:
    """A share of rows ``first``..``last`` each hold one planted key (drawn by its weight)
    in place of one of their own (an UPDATE: the key table's trigger follows); how many."""
    if not len(planted):
        return 0
    rng = np.random.default_rng([seed, 28, 6])
    n = last - first + 1
    rows = min(n, round(share * n))
    ids = rng.choice(n, size=rows, replace=False) + first
    which = rng.choice(len(planted), size=rows, p=planted.weights)
    slots = rng.integers(0, 1 << 30, size=rows)
    cur = conn.execute(_PLANT, [ids.tolist(), planted.keys[which].tolist(), slots.tolist()])
    return cur.rowcount


def store_holders(conn: psycopg.Connection[Any], keys: Iterable[int]) -> dict[int, int]:
    """How many stored rows hold each of ``keys`` (absent: none)."""
    got = conn.execute("SELECT hash, count(*) FROM simhash_text_keys WHERE hash = ANY(%s)"
                       " GROUP BY hash", [sorted(keys)]).fetchall()
    return {int(h): int(n) for h, n in got}


def holder_rows(conn: psycopg.Connection[Any], keys: Iterable[int]
                ) -> dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]]:
    """Every holder of each of ``keys``: (row ids, fingerprints as uint64)."""
    got = conn.execute(
        "SELECT k.hash, k.id, d.fingerprint FROM simhash_text_keys k JOIN simhash_documents d"
        " ON d.id = k.id AND d.created_at = k.created_at WHERE k.hash = ANY(%s)",
        [sorted(keys)]).fetchall()
    by: dict[int, tuple[list[int], list[int]]] = {}
    for h, i, f in got:
        ids, fps = by.setdefault(int(h), ([], []))
        ids.append(int(i))
        fps.append(int(f))
    return {h: (np.array(ids, dtype=np.int64), np.array(fps, dtype=np.int64).view(np.uint64))
            for h, (ids, fps) in by.items()}


def repair_indexes(conn: psycopg.Connection[Any]) -> list[str]:
    """Build again, on every partition, the store's indexes that are not valid; their names.

    ``copy_rows(keys_in_bulk=True)`` drops the secondary indexes of simhash_documents and
    simhash_text_keys and runs what ``pg_get_indexdef`` gave for each again: for a
    partitioned table's index that is ``CREATE INDEX ... ON ONLY``, an invalid index on
    the parent alone, and the block probes and key look-ups become sequential scans of
    every partition.
    """
    bad = conn.execute(
        "SELECT c.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x"
        " JOIN pg_class c ON c.oid = x.indexrelid"
        " WHERE x.indrelid IN ('simhash_text_keys'::regclass, 'simhash_documents'::regclass)"
        " AND NOT x.indisvalid").fetchall()
    for name, definition in bad:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
        conn.execute(str(definition).replace(" ON ONLY ", " ON ", 1))
    return [str(name) for name, _ in bad]


def days_of(conn: psycopg.Connection[Any]) -> Any:
    """Yesterday's and today's partitions made; the rows' Days (as ``bench scale``)."""
    from lab.bench.rows import two_days

    return two_days(conn)


# ---------------------------------------------------------------- the look-up's model


@dataclass(frozen=True)
class CapRule:
    """What a key held by more than ``cap`` rows finds: nothing (today, cap 16), or with
    ``nearest``, its ``cap`` holders nearest the query, if it has at most ``scan`` (None:
    any number)."""

    cap: int = CAP
    nearest: bool = False
    scan: int | None = None

    @property
    def name(self) -> str:
        if not self.nearest:
            return f"cap {self.cap}" + (" (today)" if self.cap == CAP else "")
        return (f"nearest {self.cap} of <= {self.scan:,} holders" if self.scan is not None
                else f"nearest {self.cap} of any holders")

    def finds_all(self, n: int) -> bool:
        return n <= self.cap

    def ranks(self, n: int) -> bool:
        return self.nearest and n > self.cap and (self.scan is None or n <= self.scan)

    def cost(self, n: int) -> tuple[int, int]:
        """(key index entries read, candidates) of one look-up of a key of ``n`` holders."""
        if n <= self.cap:
            return n, n
        if self.ranks(n):
            return n, self.cap
        limit = self.scan if self.nearest and self.scan is not None else self.cap
        return min(n, limit + 1), 0


RULES = (CapRule(), CapRule(64), CapRule(256), CapRule(nearest=True, scan=256),
         CapRule(nearest=True, scan=1024), CapRule(nearest=True, scan=4096),
         CapRule(nearest=True))


@dataclass
class Phase:
    """One store's state: its rows, its key holders, its answers."""

    name: str
    rows: int
    holders: dict[int, int]  # eval keys: rows holding them
    det: list[BoolA]  # per set, the store's answers (near_many)
    ranked: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]]  # over-cap keys
    seconds: float = 0.0


class Lookup:
    """The key candidates of the eval's pairs under a cap rule, in a phase's store."""

    def __init__(self, ek: EvalKeys, rows: dict[str, tuple[int, int]], phase: Phase) -> None:
        self.ek, self.rows, self.phase = ek, rows, phase
        self._near: dict[tuple[str, int, int], set[int]] = {}

    def nearest(self, a: str, h: int, cap: int) -> set[int]:
        """The row ids of the ``cap`` holders of ``h`` nearest ``a``'s fingerprint."""
        got = self._near.get((a, h, cap))
        if got is None:
            ids, fps = self.phase.ranked[h]
            fa = np.uint64(self.rows[a][1] & (2**64 - 1))
            dist = np.bitwise_count(fps ^ fa)
            got = set(ids[np.lexsort((ids, dist))[:cap]].tolist())
            self._near[a, h, cap] = got
        return got

    def meets(self, a: str, b: str, d: int, rule: CapRule) -> set[int]:
        """The keys by which query ``a`` finds ``b`` (0 stands for the signature)."""
        ek, holders = self.ek, self.phase.holders
        out: set[int] = set()
        if ek.sig[a] is not None and ek.sig[a] == ek.sig[b]:
            out.add(0)  # the signature's look-up has no holder cap
        for h in ek.hashes[a] & ek.hashes[b]:
            if h in ek.minhash[a] and d > MINHASH_CAP:
                continue
            n = holders.get(h, 0)
            if rule.finds_all(n) or (rule.ranks(n)
                                     and self.rows[b][0] in self.nearest(a, h, rule.cap)):
                out.add(h)
        return out

    def candidates(self, ps: Q.PairSet, distance: npt.NDArray[np.int64],
                   rule: CapRule) -> BoolA:
        return np.array([bool(self.meets(a, b, int(d), rule))
                         for a, b, d in zip(ps.a, ps.b, distance, strict=True)], dtype=bool)

    def cost(self, queries: Iterable[str], rule: CapRule) -> tuple[float, int, float, int]:
        """Per query: mean and max key index entries read, mean and max key candidates."""
        entries, cands = [], []
        for q in queries:
            e = c = 0
            for h in self.ek.hashes[q]:
                x, y = rule.cost(self.phase.holders.get(h, 0))
                e, c = e + x, c + y
            entries.append(e)
            cands.append(c)
        return (float(np.mean(entries)), int(np.max(entries)), float(np.mean(cands)),
                int(np.max(cands)))


def decisions(m: Measured, setting: Setting, cand: BoolA) -> BoolA:
    """The store's decisions (the model's) with key candidates ``cand``."""
    r = m.res
    return Q.decide(setting.rule, r.distance, r.similarity, m.ps.short, cand, r.queries,
                    m.hits[setting.t])


# ---------------------------------------------------------------- reports


def pair_class(m: Measured, j: int) -> str:
    if m.ps.name == "short":
        return "title"
    return "licence" if "licen" in str(m.ps.kind[j]) else "news"


def prf(det: BoolA, dup: BoolA) -> tuple[str, str]:
    c = Q.counts(det, dup)
    return f"{c.precision:.4f} / {c.recall:.4f} / {c.f1:.4f}", f"{c.tp} / {c.fp} / {c.fn}"


def found_by(m: Measured, setting: Setting, det: BoolA, key: BoolA) -> tuple[int, int, int, int]:
    """Duplicates found by (a key alone, a probe alone, both, neither)."""
    found = det & m.ps.duplicate
    probe = m.hits[setting.t] & (m.res.distance <= max(K, setting.cap))
    return (int((found & key & ~probe).sum()), int((found & probe & ~key).sum()),
            int((found & key & probe).sum()), int((found & ~key & ~probe).sum()))


def key_only_keys(m: Measured, setting: Setting, det: BoolA, look: Lookup) -> str:
    """Duplicates found by keys alone, by how many keys meet: one / two / three or more
    (in brackets, those where the signature is one of them): a pair found by one key is
    lost when that key passes the holder cap."""
    probe = m.hits[setting.t] & (m.res.distance <= max(K, setting.cap))
    n: Counter[int] = Counter()
    sig: Counter[int] = Counter()
    for j in np.flatnonzero(det & m.ps.duplicate & ~probe).tolist():
        got = look.meets(m.ps.a[j], m.ps.b[j], int(m.res.distance[j]), CapRule())
        if got:
            n[min(len(got), 3)] += 1
            sig[min(len(got), 3)] += 0 in got
    return " / ".join(f"{n[c]} ({sig[c]})" for c in (1, 2, 3))


def planted_report(ek: EvalKeys, planted: Planted, placed: int, a: Phase, b: Phase) -> str:
    cat = dict(zip(planted.keys.tolist(), planted.category, strict=True))
    lines = [f"planted: {len(planted):,} eval keys on {placed:,} background rows "
             f"(Zipf s over ranks; each row one planted key in place of one of its own)"]
    rows = []
    for c in ("cross-family", "random", "all"):
        keys = {h for h, x in cat.items() if c in ("all", x)}
        held = [b.holders.get(h, 0) - a.holders.get(h, 0) for h in keys]
        over = {h for h in keys if b.holders.get(h, 0) > CAP}
        kinds = Counter(ek.kind[h] for h in keys)
        rows.append([c, f"{len(keys):,}", ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())),
                     f"{max(held, default=0):,}",
                     " / ".join(str(sum(lo <= x <= hi for x in held)) for lo, hi in
                                ((1000, 10**12), (41, 999), (17, 40), (5, 16), (1, 4), (0, 0))),
                     f"{len(over):,}", f"{len(ek.holding(over)):,}"])
    lines.append(table(["planted keys", "keys", "kinds", "most background holders",
                        "keys on >= 1000 / 41-999 / 17-40 / 5-16 / 1-4 / 0 background rows",
                        f"now over the cap (> {CAP} holders)", "eval texts holding one"], rows))
    over_a = {h for h, n in a.holders.items() if n > CAP}
    over_b = {h for h, n in b.holders.items() if n > CAP}
    lines.append(f"eval keys over the cap: {len(over_a):,} in (a), {len(over_b):,} in (b) "
                 f"({len(over_b - over_a):,} new); eval texts holding one: "
                 f"{len(ek.holding(over_a)):,} in (a), {len(ek.holding(over_b)):,} in (b) "
                 f"of {len(ek.sig):,}")
    return "\n".join(lines)


def lost_report(sets: Sequence[Measured], setting: Setting, looks: dict[str, Lookup],
                a: Phase, b: Phase, planted: Planted, dist: dict[str, list[int]]) -> str:
    """Every duplicate (a) finds and (b) does not: grouped, then listed."""
    cat = dict(zip(planted.keys.tolist(), planted.category, strict=True))
    groups: Counter[tuple[str, str, str]] = Counter()
    listing = []
    for s, m in enumerate(sets):
        lost = np.flatnonzero(a.det[s] & ~b.det[s] & m.ps.duplicate)
        probe = m.hits[setting.t] & (m.res.distance <= max(K, setting.cap))
        for j in lost.tolist():
            x, y, d = m.ps.a[j], m.ps.b[j], int(m.res.distance[j])
            ka = looks["a"].meets(x, y, d, CapRule())
            kb = looks["b"].meets(x, y, d, CapRule())
            capped = {h for h in ka - kb if h and b.holders.get(h, 0) > CAP}
            if probe[j]:
                cause = "probe-reachable (?)"
            elif ka and not kb and capped == ka:
                cause = "its only finding key(s) capped"
            else:
                cause = "other"
            how = "+".join(sorted({f"{ek_kind(looks['a'].ek, h)} {cat.get(h, 'not planted')}"
                                   for h in capped})) or "-"
            groups[pair_class(m, j), cause, how] += 1
            dist.setdefault(pair_class(m, j), []).append(d)
            listing.append([pair_class(m, j), str(m.ps.kind[j]), str(m.ps.edit[j]), x, y, str(d),
                            ", ".join(f"{ek_kind(looks['a'].ek, h)} {a.holders.get(h, 0)}"
                                      f"->{b.holders.get(h, 0)}" for h in sorted(capped)),
                            cause])
    if not listing:
        return "no duplicate found in (a) is lost in (b)"
    out = [table(["class", "cause", "capped key: kind, planted as", "pairs"],
                 [[*k, str(n)] for k, n in sorted(groups.items(), key=lambda kv: -kv[1])])]
    shown = listing[:40]
    out.append(f"\nthe lost pairs ({len(listing)}{', first 40' if len(listing) > 40 else ''}):\n")
    out.append(table(["class", "kind", "edit", "a", "b", "bits", "capped keys: holders (a)->(b)",
                      "cause"], shown))
    return "\n".join(out)


def ek_kind(ek: EvalKeys, h: int) -> str:
    return "signature" if h == 0 else ek.kind.get(h, "?")


# ---------------------------------------------------------------- the run


def run(args: argparse.Namespace, log: Log) -> None:
    from lab.bench._scratch import scratch_dsn
    from lab.bench.rows import Segment, copy_rows, last_id, profile
    from simhash_pg.db import migrate
    from simhash_pg.db.server_settings import sized_settings
    from simhash_pg.store import SimhashStore
    from simhash_pg.verify.rule import policy_for

    eval_dir = Q.resolve_eval_dir(args.eval_dir)
    policy = policy_for("all")
    assert policy.probe_t is not None
    setting = Setting(policy.probe_t, policy.probe_cap)
    sets: list[Measured] = []
    for short, title in ((False, "documents"), (True, "titles")):
        ps = Q.load_pairs(eval_dir, short=short, sample=args.limit, seed=args.seed)
        sets.append(measure(title, ps, None, [setting.t], (), args.workers, log))
    texts: dict[str, str] = {}
    for m in sets:
        texts.update(m.ps.texts)
    ek = eval_keys(texts)
    fam = families([m.ps for m in sets])
    planted = choose_planted(ek, fam, args.planted_keys, args.zipf, args.seed)
    log(f"eval: {len(texts):,} texts, {len(ek.holders):,} keys "
        f"({', '.join(f'{k} {n:,}' for k, n in sorted(Counter(ek.kind.values()).items()))}), "
        f"{len(set(fam.values())):,} families; {len(planted):,} keys to plant")

    rows_hint = args.background + len(texts)
    with scratch_dsn(args.dsn, dbname="quality_at_scale",
                     settings=sized_settings(rows=rows_hint)) as dsn:
        migrate.downgrade(dsn, "base")
        migrate.upgrade(dsn)
        with store_connect(dsn) as conn:
            days = days_of(conn)
        phases: dict[str, Phase] = {}
        with SimhashStore(dsn, verify="all") as st:
            add_texts(st, sets, log)
            with store_connect(dsn) as conn:
                rows = {str(k): (int(i), int(f)) for k, i, f in conn.execute(
                    "SELECT key, id, fingerprint FROM simhash_documents")}
                conn.execute("VACUUM (ANALYZE)")
            phases["a"] = ask(st, dsn, "a", sets, ek, log)
            with store_connect(dsn) as conn:
                first = last_id(conn) + 1
                p = profile("news", 400, args.seed, samples=2048 if args.background >= 100_000
                            else 256)
                t = time.perf_counter()
                seg = Segment(0, args.background, args.background, first - 1)
                copy_rows(conn, p, seg, days, args.boilerplate, args.seed,
                          lambda n, s: log(f"  {n:,} rows in {s:.0f} s"), keys_in_bulk=True)
                log(f"background: {args.background:,} news rows (ids {first:,}.."
                    f"{first + args.background - 1:,}) in {time.perf_counter() - t:.0f} s")
                t = time.perf_counter()
                bad = repair_indexes(conn)
                if bad:
                    log(f"{len(bad)} indexes left invalid by copy_rows(keys_in_bulk=True) "
                        f"(CREATE INDEX ... ON ONLY: no partition has them): {', '.join(bad)};"
                        f" built again on every partition in {time.perf_counter() - t:.0f} s")
                t = time.perf_counter()
                conn.execute("VACUUM (ANALYZE) simhash_documents, simhash_text_keys")
                placed = plant(conn, planted, first, first + args.background - 1,
                               args.plant_share, args.seed)
                log(f"planted {len(planted):,} eval keys on {placed:,} rows in "
                    f"{time.perf_counter() - t:.0f} s")
                conn.execute("VACUUM (ANALYZE)")
            phases["b"] = ask(st, dsn, "b", sets, ek, log)
        a, b = phases["a"], phases["b"]
        report(args, sets, setting, ek, rows, planted, placed, a, b, log)


def ask(st: Any, dsn: str, name: str, sets: Sequence[Measured], ek: EvalKeys,
        log: Log) -> Phase:
    """The store's answers to every pair, its eval keys' holders, the over-cap keys' holders."""
    t = time.perf_counter()
    det = Q.store_decisions([m.ps for m in sets], st, K, progress=log)
    took = time.perf_counter() - t
    with store_connect(dsn) as conn:
        n = conn.execute("SELECT count(*) FROM simhash_documents").fetchone()[0]  # type: ignore[index]
        holders = store_holders(conn, ek.holders)
        # the over-cap keys some pair shares: the nearest-holder rules rank their holders
        shared = {h for m in sets for x, y in zip(m.ps.a, m.ps.b, strict=True)
                  for h in ek.hashes[x] & ek.hashes[y] if holders.get(h, 0) > CAP}
        ranked = holder_rows(conn, shared)
    log(f"({name}) {n:,} rows: near_many of every pair's query in {took:.0f} s; "
        f"{len(shared):,} shared over-cap keys, {sum(len(v[0]) for v in ranked.values()):,} "
        "holders")
    return Phase(name, int(n), holders, det, ranked, took)


def report(args: argparse.Namespace, sets: Sequence[Measured], setting: Setting,
           ek: EvalKeys, rows: dict[str, tuple[int, int]], planted: Planted, placed: int,
           a: Phase, b: Phase, log: Log) -> None:
    looks = {"a": Lookup(ek, rows, a), "b": Lookup(ek, rows, b)}
    print()
    print(f"# Quality at scale: the eval's pairs in an empty store (a) and in one holding "
          f"{args.background:,} background news rows (b)\n")
    print(f"(a) {a.rows:,} rows; (b) {b.rows:,} rows; verify='all', k = {K}, probes "
          f"{setting.name}, holder cap {CAP}; background: {100 * args.boilerplate:g}% hold one "
          f"of 50 shared keys of their own, {100 * args.plant_share:g}% one planted eval key "
          f"(Zipf s = {args.zipf:g}), seed {args.seed}\n")
    print(planted_report(ek, planted, placed, a, b), "\n")

    head = ["store", "set", "P / R / F1", "TP / FP / FN",
            "found by key only / probe only / both / neither",
            "key only, by 1 / 2 / 3+ keys (signature)", "model = store (pairs differing)"]
    body = []
    for ph in (a, b):
        for s, m in enumerate(sets):
            key = looks[ph.name].candidates(m.ps, m.res.distance, CapRule())
            differ = int((decisions(m, setting, key) != ph.det[s]).sum())
            body.append([f"({ph.name}) {ph.rows:,} rows", m.title, *prf(ph.det[s], m.ps.duplicate),
                         " / ".join(map(str, found_by(m, setting, ph.det[s], key))),
                         key_only_keys(m, setting, ph.det[s], looks[ph.name]), str(differ)])
    print("## The store's answers\n")
    print(table(head, body), "\n")

    print("## Duplicates (a) finds and (b) loses\n")
    dist: dict[str, list[int]] = {}
    print(lost_report(sets, setting, looks, a, b, planted, dist), "\n")
    gained = sum(int((~a.det[s] & b.det[s]).sum()) for s in range(len(sets)))
    print(f"pairs (b) calls duplicates and (a) does not: {gained}")
    for c, ds in sorted(dist.items()):
        print(f"lost {c} pairs' Hamming distances: {sorted(ds)}")
    print()

    print("## Other cap rules (the model of the look-up, in each store)\n")
    head = ["rule", "(b) documents P / R / F1", "(b) titles P / R / F1",
            "lost pairs found again", "(a) documents R",
            "(b) key index entries read / query: mean, max",
            "(b) key candidates / query: mean, max"]
    body = []
    lost = [a.det[s] & ~b.det[s] & m.ps.duplicate for s, m in enumerate(sets)]
    queries = sorted({q for m in sets for q in m.ps.a})
    meets_target: list[str] = []
    for rule in RULES:
        det_b = [decisions(m, setting, looks["b"].candidates(m.ps, m.res.distance, rule))
                 for m in sets]
        det_a = decisions(sets[0], setting,
                          looks["a"].candidates(sets[0].ps, sets[0].res.distance, rule))
        again = sum(int((d & lo).sum()) for d, lo in zip(det_b, lost, strict=True))
        e_mean, e_max, c_mean, c_max = looks["b"].cost(queries, rule)
        dc = Q.counts(det_b[0], sets[0].ps.duplicate)
        if dc.recall >= MIN_DOC_RECALL and dc.precision >= MIN_DOC_PRECISION:
            meets_target.append(rule.name)
        body.append([rule.name, prf(det_b[0], sets[0].ps.duplicate)[0],
                     prf(det_b[1], sets[1].ps.duplicate)[0],
                     f"{again} / {sum(int(lo.sum()) for lo in lost)}",
                     f"{Q.counts(det_a, sets[0].ps.duplicate).recall:.4f}",
                     f"{e_mean:.1f}, {e_max:,}", f"{c_mean:.1f}, {c_max:,}"])
    print(table(head, body), "\n")
    dc = Q.counts(b.det[0], sets[0].ps.duplicate)
    meets = dc.recall >= MIN_DOC_RECALL and dc.precision >= MIN_DOC_PRECISION
    print(f"target (issue 28, item 5): documents P >= {MIN_DOC_PRECISION}, R >= "
          f"{MIN_DOC_RECALL} in (b): the store {'meets it' if meets else 'misses it'} "
          f"(P {dc.precision:.4f}, R {dc.recall:.4f}); rules of the model that meet it: "
          f"{', '.join(meets_target) or 'none'}")
    log(f"done; load average {os.getloadavg()[0]:.1f}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--background", type=int, default=BACKGROUND,
                    help="synthetic news rows in store (b)")
    ap.add_argument("--plant-share", type=float, default=PLANT_SHARE,
                    help="share of background rows that hold a planted eval key")
    ap.add_argument("--planted-keys", type=int, default=PLANTED_KEYS,
                    help="eval keys planted (every cross-family key, then a random sample)")
    ap.add_argument("--zipf", type=float, default=ZIPF, help="the planted keys' Zipf exponent")
    ap.add_argument("--boilerplate", type=float, default=BOILERPLATE,
                    help="share of background rows holding one of rows.py's 50 shared keys")
    ap.add_argument("--limit", type=int, default=None,
                    help="a sample of this many pairs of each set (default: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--eval-dir", type=Path, default=None)
    ap.add_argument("--dsn", default=None,
                    help="a scratch database instead of a throwaway server: it is EMPTIED")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:5.0f} s] {msg}", flush=True)

    log(f"quality_at_scale {' '.join(sys.argv[1:] if argv is None else argv)}; "
        f"load average {os.getloadavg()[0]:.1f}")
    run(args, log)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
