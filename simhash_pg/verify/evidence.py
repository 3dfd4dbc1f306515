"""Why a stored document is, or is not, a near-duplicate of a query: the evidence of a pair.

:func:`explain_pair` answers for one (query, stored row) pair what a look-up
(:func:`simhash_pg.store.lookup.lookup`) and the rule
(:meth:`VerifyPolicy.accept <simhash_pg.verify.rule.VerifyPolicy.accept>`)
decide, and why:

- what *found* the row: the fingerprint within the look-up's radius, or a
  probe (:func:`simhash_pg.text.probes.probes_meet`) within the probes' cap, or a
  key both texts hold (the sentence signature, a sentence hash, a title key,
  a min-hash key within :data:`~simhash_pg.text.signatures.MINHASH_CAP`
  bits), each key subject to the holder cap
  (:func:`~simhash_pg.text.signatures.key_holders_found`);
- what *decided* it: the rule's similarity against its bar
  (:meth:`VerifyPolicy.similarity`, :meth:`VerifyPolicy.threshold`), or
  the distance alone where the rule compares no texts;
- the verdict: ``duplicate`` (found and accepted: what ``near`` returns),
  ``not a duplicate`` (found, refused by the rule) or ``not found``.

It asks the functions the store asks; it decides nothing of its own. The
query's keys come from the store's own functions
(:func:`~simhash_pg.verify.candidates.text_and_vtext`, and
:mod:`simhash_pg.text.signatures` to tell their kinds apart). A stored
document can be the query too (the web page's compare of two stored
documents): its keys are those it stores, and its probe values, which only
its text as written gives, are known only at its own block values.

:func:`simhash_pg.store.evidence.explain` reads the rows and the keys'
holders from a store and explains each (nothing here reads the database);
``simhash-pg near --explain``, ``/v1/near`` with ``explain`` and the web
page's compare all show what it returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from simhash_pg.bits import blocks, hamming, to_signed
from simhash_pg.text.probes import probes_meet
from simhash_pg.text.signatures import (
    MINHASH_CAP,
    key_holders_found,
    minhash_keys,
    sentence_keys_normalized,
    sentences_meet,
    title_keys,
)
from simhash_pg.verify.candidates import TextAnalyser, text_and_vtext
from simhash_pg.verify.jaccard import TITLE_KEY_TEXT_CHARS, VText
from simhash_pg.verify.rule import StoredText, VerifyPolicy

__all__ = [
    "Evidence",
    "KeyMeet",
    "PairQuery",
    "StoredRow",
    "explain_pair",
]

KeyKind = Literal["sentence", "title", "min-hash", "sentence or title"]
FoundBy = Literal["radius", "probe", "signature", "sentence", "title", "min-hash",
                  "sentence or title"]
Verdict = Literal["duplicate", "not a duplicate", "not found"]


@dataclass(frozen=True)
class KeyMeet:
    """A key both texts hold (their sentence hashes, title keys or min-hash keys)."""

    kind: KeyKind
    key: int  # signed, as the column holds it
    # whether the look-up finds the row by it: its holder cap (and, for a
    # min-hash key, MINHASH_CAP); None when its holders were not counted
    finds: bool | None
    holders: int | None = None  # rows that hold it, counted up to 257


@dataclass(frozen=True)
class Evidence:
    """What found a stored row for a query and what decided it (:func:`explain_pair`)."""

    id: int
    key: str | None
    distance: int  # Hamming distance of the fingerprints, of 64 bits
    k: int
    mode: str  # the store's verify mode
    rule: int  # the rule's version
    text_query: bool  # a verified text (else a fingerprint, or a text under "off")
    lookup: Literal["radius", "probes"]
    reach: int  # the look-up's Hamming limit: the radius, or the probes' cap
    # blocks whose value is among the query's probe values (probes only; None:
    # not probed, or only the query's own block values are known); with
    # probe_pairs, the first block of each pair of blocks that met (revision 0019)
    probe_blocks: list[int] | None
    equal_blocks: list[int]  # blocks whose value the two fingerprints share
    signature: bool  # equal sentence signatures
    keys: list[KeyMeet] = field(default_factory=list)
    found_by: list[FoundBy] = field(default_factory=list)
    similarity: float | None = None  # the rule's measure of the two texts
    threshold: float | None = None  # what it must reach (None: the rule compares no texts)
    ngram: int | None = None  # the measure's n-grams
    text_kept: bool = True  # the store keeps the row's text (else no similarity)
    query_text_kept: bool = True  # False: a stored query whose text the store does not keep
    verdict: Verdict = "not found"
    probe_pairs: bool = False  # the query probed pairs of blocks (a long text, revision 0019)


@dataclass(frozen=True)
class PairQuery:
    """A query as the look-up sees it: its fingerprint and, for a verified text, its VText.

    ``sentences`` and ``titles``: which of ``vtext.hashes`` are sentence hashes
    and title keys (the others are min-hash keys, ``vtext.minhash``); None
    when unknown (a stored document's keys come without their kinds).
    """

    fingerprint: int  # unsigned
    vtext: VText | None = None
    sentences: frozenset[int] | None = None
    titles: frozenset[int] | None = None
    text_kept: bool = True  # False: a stored document whose text the store does not keep

    @classmethod
    def of_text(cls, fingerprinter: TextAnalyser, text: str, policy: VerifyPolicy
                ) -> PairQuery:
        fp, vt = text_and_vtext(fingerprinter, text, policy)
        if not vt.hashes:
            return cls(fp, vt, frozenset(), frozenset())
        # the parts jaccard.sentence_keys puts together, apart
        norm = fingerprinter.normalize(text)
        titles = (title_keys(norm, vt.text) if len(vt.text) < TITLE_KEY_TEXT_CHARS else ())
        return cls(fp, vt, frozenset(sentence_keys_normalized(norm)[1]), frozenset(titles))

    @classmethod
    def of_row(cls, row: StoredRow) -> PairQuery:
        """A stored document as the query: the keys it stores, without their kinds."""
        if not isinstance(row.text, str):
            return cls(row.fingerprint, text_kept=False)
        hashes = tuple(row.hashes)
        minhash = tuple(h for h in minhash_keys(row.text) if h in set(hashes))
        return cls(row.fingerprint, VText(row.text, row.sig, None, hashes, minhash))


@dataclass(frozen=True)
class StoredRow:
    """What the look-up and the rule read of a stored row."""

    id: int
    key: str | None
    fingerprint: int  # unsigned
    text: StoredText  # its verification text; None: not kept; TEXT_LOST
    sig: int | None = None
    hashes: tuple[int, ...] = ()
    duplicate_of: int | None = None


def _kind(h: int, q: PairQuery) -> KeyKind:
    """A shared key's kind, by the query's keys (min-hash first, as the look-up sends them)."""
    assert q.vtext is not None
    if h in q.vtext.minhash:
        return "min-hash"
    if q.titles is not None and h in q.titles:
        return "title"
    if q.sentences is not None and h in q.sentences:
        return "sentence"
    return "sentence or title"


def explain_pair(
    query: PairQuery, row: StoredRow, k: int, policy: VerifyPolicy,
    holders: Mapping[int, Sequence[tuple[int, int]]] | None = None,
) -> Evidence:
    """The evidence of one pair: what finds ``row`` for ``query`` at ``k``, and what decides.

    ``holders``: per shared key, the rows that hold it as ``(id, fingerprint)``
    (at most 257 of them; :func:`simhash_pg.store.evidence.read_holders`);
    without it a key is assumed to find the row (``KeyMeet.finds`` None).
    """
    distance = hamming(query.fingerprint, row.fingerprint)
    own, theirs = blocks(query.fingerprint), blocks(row.fingerprint)
    equal = [i for i, (x, y) in enumerate(zip(own, theirs, strict=True)) if x == y]
    base: dict[str, Any] = {
        "id": row.id, "key": row.key, "distance": distance, "k": k, "mode": policy.mode,
        "rule": policy.rule, "equal_blocks": equal,
        "text_kept": isinstance(row.text, str), "query_text_kept": query.text_kept,
    }
    vt = query.vtext
    if vt is None:  # a fingerprint query, or a text under "off": distance <= k, exactly
        found = distance <= k
        return Evidence(**base, text_query=False, lookup="radius", reach=k, probe_blocks=None,
                        signature=False, found_by=["radius"] if found else [],
                        verdict="duplicate" if found else "not found")
    probed = policy.probe_budget(vt.text, k) is not None
    found_by: list[FoundBy] = []
    probe_blocks: list[int] | None = None
    if probed:
        reach = max(k, policy.probe_cap)
        pairs = policy.probes_pairs(vt.text)
        if vt.probes is not None:
            probe_blocks = probes_meet(vt.probes, row.fingerprint, query_fp=query.fingerprint,
                                       pairs=pairs, lead=policy.probe_lead)
            met = bool(probe_blocks)
        else:  # a stored query: its own block values are always among its probes
            met = bool(probes_meet([[v] for v in own], row.fingerprint,
                                   query_fp=query.fingerprint, pairs=pairs))
        if met and distance <= reach:
            found_by.append("probe")
    else:
        reach = policy.radius(vt.text, k)
        if distance <= reach:
            found_by.append("radius")
    signature = vt.sig is not None and vt.sig == row.sig
    keys: list[KeyMeet] = []
    for h in sorted(set(vt.hashes).intersection(row.hashes)):
        kind = _kind(h, query)
        held = holders.get(h) if holders is not None else None
        finds = None if held is None else row.id in key_holders_found(
            held, to_signed(query.fingerprint))
        if kind == "min-hash" and distance > MINHASH_CAP:
            finds = False
        keys.append(KeyMeet(kind, h, finds, len(held) if held is not None else None))
    if policy.signature:
        if signature:
            found_by.append("signature")
        found_by.extend(dict.fromkeys(m.kind for m in keys if m.finds is not False))
    signature_match = sentences_meet(vt.sig, vt.hashes, row.sig, row.hashes, vt.minhash,
                                     distance)
    test = policy.pair_test(vt.text, row.text, k, probed)
    similarity = ngram = None
    if isinstance(row.text, str):
        similarity = policy.text_rule.similarity(vt.text, row.text)
        ngram = policy.text_rule.ngram(vt.text, row.text)
    (accepted,) = policy.accept(vt.text, [(row.text, distance, signature_match)], k,
                                probed=probed)
    verdict: Verdict = ("not found" if not found_by
                        else "duplicate" if accepted else "not a duplicate")
    return Evidence(**base, text_query=True, lookup="probes" if probed else "radius",
                    reach=reach, probe_blocks=probe_blocks,
                    probe_pairs=probed and policy.probes_pairs(vt.text),
                    signature=signature, keys=keys,
                    found_by=found_by, similarity=similarity, threshold=test.threshold,
                    ngram=ngram, verdict=verdict)
