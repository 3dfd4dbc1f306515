"""The verified look-up: index candidates of many queries in one round trip.

The index answers "which fingerprints lie within r bits"; the duplicate rule
(:func:`simhash_pg.verify.candidates.filter_candidates`) then decides which
of them are near-duplicates. :func:`lookup` asks the index at the policy's
radius (wider than k for short texts, and for every text under ``"all"``),
or by a text's probe values, adds the rows that share a key with the query
(when the policy uses signatures), and keeps what the rule accepts, nearest
first, ties by id: the order ``near()`` has without verification.

Single adds, ``near``, ``near_many`` and a batch's stored rows all look up
here; the rule that judges the rows stays in :mod:`simhash_pg.verify`, which
reads no database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from simhash_pg.store.sql import int_array
from simhash_pg.text.signatures import MINHASH_CAP, sentences_meet
from simhash_pg.verify.candidates import Candidate, filter_candidates
from simhash_pg.verify.jaccard import VText
from simhash_pg.verify.rule import TEXT_LOST, VerifyPolicy

__all__ = ["OWN_ONLY", "AddLookup", "lookup", "lookup_for_add"]

# Candidates within radius of each query, with what verification reads. The
# last column: the row's verification data was lost (stored before revision
# 0003 added the columns, as simhash_meta's 'unverified_rows' records, see
# sql/0003_verification.sql), so the rule judges it by distance alone.
_NEAR = (
    "SELECT n.query, n.id, n.key, n.distance, d.meta, d.verify_text, d.sentence_sig,"
    " d.sentence_hashes, coalesce(d.verify_text IS NULL AND d.id <= (u.value->>'max_id')::bigint"
    " AND d.created_at <= (u.value->>'stored_until')::timestamptz, false)"
    " FROM simhash_near_many(%s, %s) AS n JOIN simhash_documents d ON d.id = n.id"
    " LEFT JOIN simhash_meta u ON u.name = 'unverified_rows'"
)
# Rows whose sentence signature equals a query's, or that hold one of its
# sentence hashes (revision 0015), whatever their distance, or one of its
# min-hash keys within MINHASH_CAP (revision 0016; never a lost row: it has
# none of them). UNION ALL: lookup() keeps a row once per query by its id (a
# UNION would compare whole rows, texts included).
_SIG = (
    "SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, q.fp), d.meta,"
    " d.verify_text, d.sentence_sig, d.sentence_hashes, false"
    " FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY AS q (fp, sig, o)"
    " JOIN simhash_documents d ON d.sentence_sig = q.sig"
    " UNION ALL"
    " SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, q.fp), d.meta,"
    " d.verify_text, d.sentence_sig, d.sentence_hashes, false"
    " FROM unnest(%s::bigint[]) WITH ORDINALITY AS q (fp, o)"
    " CROSS JOIN LATERAL simhash_sentence_matches((%s::bigint[])[q.o:q.o][:], q.fp) AS d"
    " UNION ALL"
    " SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, q.fp), d.meta,"
    " d.verify_text, d.sentence_sig, d.sentence_hashes, false"
    " FROM unnest(%s::bigint[]) WITH ORDINALITY AS q (fp, o)"
    " CROSS JOIN LATERAL simhash_sentence_matches((%s::bigint[])[q.o:q.o][:], q.fp) AS d"
    " WHERE simhash_hamming(d.fingerprint, q.fp) <= %s"
)
# Probed queries: their probe matches and sentence matches in one call
# (sql/current/near_probes.sql), the same columns as _NEAR.
_PROBES = ("SELECT * FROM simhash_near_probes_candidates("
           "%s::bigint[], %s::smallint[], %s::integer[], %s::bigint[], %s::bigint[],"
           " %s::bigint[], %s, %s::boolean[], %s::integer)")
# One probed query (a text near() or add()): the lean single form (revisions
# 0014, 0015), the same rows without the query number.
# The arrays go as text literals (int_array): psycopg's dumping of five
# lists cost ~25 us a query, a fifth of what the single form's SQL takes.
_PROBES_ONE = ("SELECT 1, * FROM simhash_near_probes_candidates(%s, %s::smallint[],"
               " %s::smallint[], %s::smallint[], %s::smallint[], %s, %s, %s::bigint[],"
               " %s::bigint[], %s, %s, %s::integer)")



def lookup(
    conn: psycopg.Connection[Any],
    fps: Sequence[int],
    texts: Sequence[VText],
    k: int,
    policy: VerifyPolicy,
) -> list[list[Candidate]]:
    """Per query (signed fingerprint + its VText): the accepted stored rows, nearest first.

    One round trip: the probed queries (:meth:`VerifyPolicy.probe_budget`)
    through ``simhash_near_probes_candidates`` (its single-query form for
    one), the others through a ``simhash_near_many`` per distinct radius (at
    most two) and the signature look-up, pipelined when there are several.
    """
    rows = _rows(conn, fps, texts, k, policy)
    return [_accepted(texts[i], rows[i], k, policy) for i in range(len(fps))]


@dataclass(frozen=True)
class AddLookup:
    """What an add's look-up found for one text: the accepted rows, nearest first."""

    found: list[Candidate]
    # found by the first step alone (its keys and own block values:
    # VerifyPolicy.adds_in_two_steps); False: by the whole look-up
    first_step: bool


def lookup_for_add(
    conn: psycopg.Connection[Any],
    fps: Sequence[int],
    texts: Sequence[VText],
    k: int,
    policy: VerifyPolicy,
) -> list[AddLookup]:
    """:func:`lookup` as an add asks it: a text that adds in two steps
    (:meth:`VerifyPolicy.adds_in_two_steps`) probes only if its keys and own
    block values find no row the rule accepts.

    The second round trip, for those texts alone, skips their keys (already
    looked up) and probes; the rows of both steps are the rows of
    :func:`lookup`, and the rule judges each row on its own, so a text that
    needs both steps gets exactly :func:`lookup`'s answer.
    """
    two = [policy.adds_in_two_steps(t.text, k) for t in texts]
    first = [t._replace(probes=OWN_ONLY) if two[i] else t for i, t in enumerate(texts)]
    rows = _rows(conn, fps, first, k, policy)
    out = [AddLookup(_accepted(texts[i], rows[i], k, policy), two[i]) for i in range(len(fps))]
    todo = [i for i in range(len(fps)) if two[i] and not out[i].found]
    if todo:
        more = _rows(conn, [fps[i] for i in todo], [texts[i] for i in todo], k, policy,
                     keys=False)
        for i, found in zip(todo, more, strict=True):
            out[i] = AddLookup(_accepted(texts[i], found, k, policy), False)
    return out


# A pair-probed text's first step: no probe values; the SQL adds its own
# block values and their one-bit flips (the pair lemma), as probe_meets does.
OWN_ONLY: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])


def _accepted(qt: VText, rows: dict[int, tuple[Any, ...]], k: int,
              policy: VerifyPolicy) -> list[Candidate]:
    """The rows of one query the rule accepts, nearest first."""
    found = (
        Candidate(id_, key, dist, meta, TEXT_LOST if lost else vtext,
                  sentences_meet(qt.sig, qt.hashes, sig, hashes, qt.minhash, dist))
        for id_, key, dist, meta, vtext, sig, hashes, lost in rows.values()
    )
    probed = policy.probe_budget(qt.text, k) is not None
    return filter_candidates(qt.text, found, k, policy, probed=probed)


def _rows(
    conn: psycopg.Connection[Any],
    fps: Sequence[int],
    texts: Sequence[VText],
    k: int,
    policy: VerifyPolicy,
    *,
    keys: bool = True,
) -> list[dict[int, tuple[Any, ...]]]:
    """Per query, its candidate rows by id (the columns after the query number).

    ``keys=False``: the queries look up no key (their first step did).
    """
    signature = bool(policy.signature) and keys
    n = len(fps)
    groups: dict[int, list[int]] = {}
    probed: list[int] = []
    for i, t in enumerate(texts):
        if policy.probe_budget(t.text, k) is not None:
            if t.probes is None:
                raise ValueError("a probed text query needs its probe values (VText.probes)")
            probed.append(i)
        else:
            groups.setdefault(policy.radius(t.text, k), []).append(i)
    is_probed = set(probed)
    sig_pos = ([i for i, t in enumerate(texts)
                if (t.sig is not None or t.hashes) and i not in is_probed]
               if signature else [])
    # (statement, parameters) per look-up; several go in one pipeline, one alone
    # (a pipeline costs a round trip's worth of bookkeeping)
    todo: list[tuple[str, list[Any]]] = []
    if len(probed) == 1:
        (i,) = probed
        probes = texts[i].probes
        assert probes is not None
        hashes, minhash = _keys(texts[i]) if signature else ((), ())
        todo.append((_PROBES_ONE, [fps[i], *map(int_array, probes),
                                   max(k, policy.probe_cap),
                                   texts[i].sig if signature else None,
                                   int_array(hashes) if hashes else None,
                                   int_array(minhash) if minhash else None, MINHASH_CAP,
                                   policy.probes_pairs(texts[i].text), policy.probe_lead]))
    elif probed:
        todo.append((_PROBES, [
            [fps[i] for i in probed],
            _probe_array([texts[i].probes for i in probed]),  # type: ignore[misc]
            [max(k, policy.probe_cap)] * len(probed),
            [texts[i].sig for i in probed] if signature else None,
            *_key_rows([texts[i] for i in probed], signature), MINHASH_CAP,
            [policy.probes_pairs(texts[i].text) for i in probed], policy.probe_lead,
        ]))
    todo += [(_NEAR, [[fps[i] for i in pos], r]) for r, pos in groups.items()]
    if sig_pos:
        sfps = [fps[i] for i in sig_pos]
        hash_rows, minhash_rows = _key_rows([texts[i] for i in sig_pos], True)
        todo.append((_SIG, [sfps, [texts[i].sig for i in sig_pos], sfps, hash_rows,
                            sfps, minhash_rows, MINHASH_CAP]))
    if len(todo) == 1:
        cursors = [conn.execute(*todo[0], prepare=True)]
    else:
        with conn.pipeline():
            cursors = [conn.execute(q, args, prepare=True) for q, args in todo]
    c_probed = cursors.pop(0) if probed else None
    curs = [(pos, cursors.pop(0)) for pos in groups.values()]
    c_sig = cursors.pop(0) if sig_pos else None
    rows: list[dict[int, tuple[Any, ...]]] = [{} for _ in range(n)]
    for pos, cur in curs:
        for q, *row in cur.fetchall():
            rows[pos[q - 1]][row[0]] = tuple(row)
    if c_sig is not None:
        for q, *row in c_sig.fetchall():
            rows[sig_pos[q - 1]].setdefault(row[0], tuple(row))
    if c_probed is not None:
        for q, *row in c_probed.fetchall():
            rows[probed[q - 1]].setdefault(row[0], tuple(row))
    return rows


def _keys(t: VText) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A text's sentence hashes and title keys, and apart its min-hash keys."""
    if not t.minhash:
        return t.hashes, ()
    return tuple(h for h in t.hashes if h not in t.minhash), t.minhash


def _key_rows(texts: Sequence[VText], signature: bool) -> tuple[Any, Any]:
    """:func:`_hash_rows` of the texts' hashes and of their min-hash keys (None, None
    without signatures)."""
    if not signature:
        return None, None
    keys = [_keys(t) for t in texts]
    return _hash_rows([h for h, _ in keys]), _hash_rows([m for _, m in keys])


def _hash_rows(hashes: Sequence[Sequence[int]]) -> list[list[int | None]] | None:
    """Per query its sentence hashes, NULL-padded: the SQL's 2-D bigint[] (None: none at all)."""
    width = max(map(len, hashes), default=0)
    if width == 0:
        return None
    return [[*h, *[None] * (width - len(h))] for h in hashes]


def _probe_array(probes: Sequence[Sequence[Sequence[int]]]) -> str:
    """Per query, block and value, NULL-padded to the longest list: the SQL's 3-D smallint[].

    As the array's text form: psycopg's dumping of nested lists of ints
    cost ~0.15 ms a query, more than building the literal.
    """
    # at least one value (NULL: matches nothing), so that the array keeps its
    # three dimensions when no query probes a value (an add's first step)
    width = max((len(b) for p in probes for b in p), default=0) or 1
    return "{" + ",".join(
        "{" + ",".join("{" + ",".join([*map(str, b), *["NULL"] * (width - len(b))]) + "}"
                       for b in p) + "}"
        for p in probes
    ) + "}"
