"""One add_many batch: check, fingerprint, lock, look up, decide in order, COPY.

Steps, each a function below:

1. :func:`prepare`: check every input and fingerprint the texts (in worker
   processes), with each text's VText from the same normalised string; a
   bad input becomes an error result, never an exception.
2. :func:`add_batch` locks the batch (its keys and, with dedup, its
   fingerprints at the widest radius any of its texts needs;
   store/locking.py) in one transaction, rerun after a lost race, and in it
3. :func:`_look_up`: one round trip for the stored keys, the nearest stored
   row of every unverified fingerprint and the new ids; one more for the
   verified texts' candidates (store/lookup.py);
4. :func:`_decide`: every document in input order, exactly as sequential
   ``add()`` calls would decide it, against the stored rows and the batch's
   own earlier rows (:class:`~simhash_pg.store.batch_index.BatchIndex`);
5. the new rows go in by one binary COPY (store/pgcopy.py), each text's body
   (its text as written) with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from simhash_pg.bits import PIGEONHOLE_K, to_signed_list, to_unsigned
from simhash_pg.store import locking, sql
from simhash_pg.store.batch_index import BatchIndex, EarlierPairs, Hit
from simhash_pg.store.checks import parse_item
from simhash_pg.store.lookup import OWN_ONLY, lookup_for_add
from simhash_pg.store.pgcopy import copy_documents
from simhash_pg.store.results import AddResult, OnDuplicate
from simhash_pg.text.signatures import sentences_meet
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify import VerifyPolicy, VText
from simhash_pg.verify.candidates import Candidate, filter_candidates, texts_and_vtexts

__all__ = ["BatchOptions", "Prepared", "add_batch", "prepare"]

# (fingerprint, key, meta) of a valid input
Item = tuple[int, str | None, dict[str, Any] | None]


@dataclass
class Prepared:
    """A checked, fingerprinted batch, by input position."""

    items: list[Item]  # (0, None, None) where errors has a result
    errors: list[AddResult | None]
    vtexts: dict[int, VText] = field(default_factory=dict)  # texts, when the policy needs them
    bodies: dict[int, str] = field(default_factory=dict)  # texts as written, when kept

    def valid(self) -> list[int]:
        return [i for i, e in enumerate(self.errors) if e is None]


@dataclass(frozen=True)
class BatchOptions:
    """How a batch is written: the store's settings and the call's arguments."""

    policy: VerifyPolicy
    dedup: bool
    k: int
    on_duplicate: OnDuplicate
    lock: bool = True  # the near-duplicate locks (the keys' are always taken)
    pigeonhole: bool = True  # False: the store-wide lock instead (a benchmark's comparison)
    lock_timeout: float | None = None  # for the LockTimeoutError's message
    probe_locks: bool = True  # False: probed texts lock their own blocks only (a test's proof)


def prepare(batch: Sequence[Any], fingerprinter: Fingerprinter, policy: VerifyPolicy,
            workers: int | None, *, probes: bool = True, keep_text: bool = True) -> Prepared:
    """Check and fingerprint a batch; errors as results, VTexts as the policy needs.

    ``probes=False``: without the texts' probe values, which only a look-up
    uses (bulk_load looks nothing up). ``keep_text``: each text's body, its
    text as written (``Fingerprinter.written``: in this process, as it costs
    little next to the fingerprint and a worker would send it back pickled).
    """
    parsed: list[tuple[str | int, str | None, dict[str, Any] | None] | None] = []
    errors: list[AddResult | None] = [None] * len(batch)
    for i, item in enumerate(batch):
        try:
            parsed.append(parse_item(item))
        except (TypeError, ValueError) as exc:
            parsed.append(None)
            key = getattr(item, "key", None) if isinstance(item, tuple) else None
            errors[i] = AddResult(None, None, None, None, False,
                                  key=key if isinstance(key, str) else None, error=str(exc))
    at = [i for i, p in enumerate(parsed) if p is not None and isinstance(p[0], str)]
    texts = [parsed[i][0] for i in at]  # type: ignore[index]
    out = Prepared([], errors)
    fps: dict[int, int | None] = {}
    if at and policy.needs_text:
        pairs = texts_and_vtexts(fingerprinter, texts, policy, workers, probes=probes)
        for i, (fp, vt) in zip(at, pairs, strict=True):
            fps[i] = fp
            if vt is not None:
                out.vtexts[i] = vt
    elif at:
        fps = dict(zip(at, fingerprinter.fingerprint_many(texts, workers, on_error="none"),
                       strict=True))
    for i, p in enumerate(parsed):
        fp = None if p is None else fps[i] if isinstance(p[0], str) else p[0]
        if p is None or fp is None:
            if p is not None:  # a text without a fingerprint
                errors[i] = AddResult(None, None, None, None, False, key=p[1],
                                      error=_why_not(fingerprinter, p[0]))
            out.items.append((0, None, None))
            continue
        out.items.append((fp, p[1], p[2]))
        if keep_text and isinstance(p[0], str):
            out.bodies[i] = fingerprinter.written(p[0])
    return out


def _why_not(fingerprinter: Fingerprinter, text: Any) -> str:
    try:
        fingerprinter.fingerprint(text)
    except (TypeError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return "could not be fingerprinted"


def add_batch(conn: psycopg.Connection[Any], p: Prepared, o: BatchOptions) -> list[AddResult]:
    """Lock, look up, decide and COPY one prepared batch: one transaction, retried."""
    valid = [p.items[i] for i in p.valid()]
    keys = [key for _, key, _ in valid if key is not None]
    radius = o.k
    # probed texts lock their probe values and signatures (store/locking.py),
    # the others their radius
    probes: list[Any] = []
    sigs: list[int] = []
    if o.policy.verifies and p.vtexts:
        for v in p.vtexts.values():
            if o.policy.probe_budget(v.text, o.k) is None:
                radius = max(radius, o.policy.radius(v.text, o.k))
            elif o.probe_locks:
                probes.append(o.policy.lock_probes(v))
                if o.policy.signature:
                    sigs += locking.sentence_lock_values(v)
    # lock=False (a benchmark's comparison) leaves out the near-duplicate
    # locks, never the keys'
    locked = o.dedup and o.lock
    fps = [fp for fp, _, _ in valid] if locked else []
    if not locked:
        probes, sigs = [], []

    def attempt() -> list[AddResult]:
        with conn.transaction():
            locking.lock_batch(conn, fps, radius, keys, dedup=locked, pigeonhole=o.pigeonhole,
                               probes=probes, sigs=sigs)
            return _write(conn, p, o)

    return locking.retrying(conn, attempt, lock_timeout=o.lock_timeout)


@dataclass
class _Found:
    """What the database holds for a batch, by input position."""

    stored_keys: dict[str, tuple[int, int, int | None]]  # key -> (id, fingerprint, duplicate_of)
    nearest: dict[int, Hit]  # the nearest stored row the rule accepts
    ids: Iterator[int]  # new ids, one per valid input at most
    # texts whose nearest stored row came from the first step of a two-step
    # look-up (VerifyPolicy.adds_in_two_steps): their probes were not asked
    first_step: set[int] = field(default_factory=set)


def _write(conn: psycopg.Connection[Any], p: Prepared, o: BatchOptions) -> list[AddResult]:
    valid = p.valid()
    signed = dict(zip(valid, to_signed_list(p.items[i][0] for i in valid), strict=True))
    # verified: text documents when verification is on; plain: the others
    verified = [i for i in valid if i in p.vtexts] if o.policy.verifies else []
    found = _look_up(conn, p, valid, signed, verified, o)
    results, rows = _decide(p, valid, signed, bool(verified), found, o)
    if rows:
        copy_documents(conn, rows)
    return results


def _look_up(conn: psycopg.Connection[Any], p: Prepared, valid: list[int],
             signed: dict[int, int], verified: list[int], o: BatchOptions) -> _Found:
    keys = list({p.items[i][1] for i in valid if p.items[i][1] is not None})
    plain = [i for i in valid if i not in p.vtexts] if verified else valid
    # one round trip: stored keys, the nearest stored row per fingerprint, new ids
    with conn.pipeline():
        c_keys = conn.execute(sql.KEYS, [keys], prepare=True) if keys else None
        c_near = (conn.execute(sql.NEAREST_MANY, [[signed[i] for i in plain], o.k], prepare=True)
                  if o.dedup and plain else None)
        c_ids = conn.execute(sql.NEXT_IDS, [len(valid)], prepare=True) if valid else None
    stored_keys = {key: (id_, to_unsigned(fp), dup)
                   for key, id_, fp, dup in (c_keys.fetchall() if c_keys else [])}
    nearest: dict[int, Hit] = {}
    first_step: set[int] = set()
    for q, id_, key, dist in c_near.fetchall() if c_near else []:
        nearest[plain[q - 1]] = (dist, id_, key)
    ids = [r[0] for r in c_ids.fetchall()] if c_ids else []
    if o.dedup and verified:
        # one more round trip: every candidate, re-checked by the rule
        hits = lookup_for_add(conn, [signed[i] for i in verified],
                              [p.vtexts[i] for i in verified], o.k, o.policy)
        for i, hit in zip(verified, hits, strict=True):
            if hit.found:
                nearest[i] = (hit.found[0].distance, hit.found[0].id, hit.found[0].key)
                if hit.first_step:
                    first_step.add(i)
    return _Found(stored_keys, nearest, iter(ids), first_step)


def _decide(p: Prepared, valid: list[int], signed: dict[int, int], verifying: bool,
            found: _Found, o: BatchOptions) -> tuple[list[AddResult], list[tuple[Any, ...]]]:
    """Every valid document in input order, as sequential add() calls: results and new rows."""
    results: list[AddResult | None] = list(p.errors)
    batch_keys: dict[str, int] = {}  # key -> position of the row stored in this batch
    plain = o.policy.fingerprint_test(o.k)  # what decides a row without a verified text
    index = BatchIndex(plain, scan=verifying)
    # fingerprints only, k <= 3: the batch's own pairs within k found up front
    pairs = (EarlierPairs.of([p.items[i][0] for i in valid], plain)
             if o.dedup and not verifying and plain.radius <= PIGEONHOLE_K else None)
    rows: list[tuple[Any, ...]] = []
    for t, i in enumerate(valid):
        fp, key, meta = p.items[i]
        if key is not None and key in found.stored_keys:
            id_, sfp, sdup = found.stored_keys[key]
            results[i] = AddResult(id_, sfp, sdup, None, False, key=key, existing_key=True)
            continue
        if key is not None and key in batch_keys:
            first = results[batch_keys[key]]
            assert first is not None
            results[i] = AddResult(first.id, first.fingerprint, first.duplicate_of, None,
                                   False, key=key, existing_key=True)
            continue
        best: Hit | None = None
        if o.dedup:
            best = found.nearest.get(i)
            vt = p.vtexts.get(i) if verifying else None
            if pairs is not None:
                mine = pairs.nearest(t)
            elif vt is not None and o.policy.adds_in_two_steps(vt.text, o.k):
                best, mine = _two_steps(index, fp, vt, o, best, i in found.first_step)
            else:
                mine = index.nearest(fp) if vt is None else _in_batch(index, fp, vt, o)
            if mine is not None and (best is None or mine[:2] < best[:2]):
                best = mine
        if best is not None and o.on_duplicate == "skip":
            results[i] = AddResult(best[1], fp, best[1], best[0], False, key=key,
                                   duplicate_key=best[2])
            continue
        new_id = next(found.ids)
        dup_of = best[1] if best is not None else None
        results[i] = AddResult(new_id, fp, dup_of, best[0] if best else None, True, key=key,
                               duplicate_key=best[2] if best else None)
        vtext, sig, hashes = o.policy.stored_fields(p.vtexts.get(i))
        if pairs is not None:
            pairs.add(t, new_id, key)
        elif o.dedup:
            index.add(fp, new_id, key, vtext, sig, hashes)
        if key is not None:
            batch_keys[key] = i
        rows.append((new_id, key, signed[i], dup_of,
                     Jsonb(meta) if meta is not None else None, vtext, sig, hashes,
                     p.bodies.get(i)))
    final = [r for r in results if r is not None]
    assert len(final) == len(results)
    return final, rows


def _two_steps(index: BatchIndex, fp: int, vt: VText, o: BatchOptions, stored: Hit | None,
               stored_first: bool) -> tuple[Hit | None, Hit | None]:
    """(stored, in-batch) hits of a text that adds in two steps, as add() would find them
    with the batch's earlier rows stored: the first step over both, and only if
    neither finds a row the rule accepts, the whole look-up over both.

    ``stored``: the nearest stored row, from the first step if ``stored_first``,
    else from the whole look-up (which ran because the first found none).
    """
    mine = _in_batch(index, fp, vt, o, first_step=True)
    if stored_first or mine is not None:
        return (stored if stored_first else None), mine
    return stored, _in_batch(index, fp, vt, o)


def _in_batch(index: BatchIndex, fp: int, vt: VText, o: BatchOptions, *,
              first_step: bool = False) -> Hit | None:
    """The nearest row stored earlier in this batch that the rule accepts: what add() finds.

    ``first_step``: what the first step of a two-step add finds
    (:meth:`VerifyPolicy.adds_in_two_steps`): the text's keys and its own block values.
    """
    probed = o.policy.probe_budget(vt.text, o.k) is not None
    if probed:  # the rows the database would return to the same query's probes
        assert vt.probes is not None
        hits = index.probed(fp, OWN_ONLY if first_step else vt.probes,
                            max(o.k, o.policy.probe_cap), pairs=o.policy.probes_pairs(vt.text),
                            lead=o.policy.probe_lead)
    else:
        hits = index.within(fp, o.policy.radius(vt.text, o.k))
    if o.policy.signature and (vt.sig is not None or vt.hashes):
        seen = {pos for pos, _ in hits}
        hits += [(pos, d) for pos, d in index.same_sentences(fp, vt.sig, vt.hashes)
                 if pos not in seen]
    kept = filter_candidates(
        vt.text,
        (Candidate(index.ids[pos], index.keys[pos], d, None, index.vtexts[pos],
                   sentences_meet(vt.sig, vt.hashes, index.sigs[pos], index.hashes[pos],
                                  vt.minhash, d))
         for pos, d in hits),
        o.k, o.policy, probed=probed,
    )
    return (kept[0].distance, kept[0].id, kept[0].key) if kept else None
