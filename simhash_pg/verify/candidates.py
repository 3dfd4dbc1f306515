"""Candidate look-up: index candidates re-checked by the duplicate rule.

The index answers "which fingerprints lie within r bits"; the rule then
decides which of those are near-duplicates (:meth:`VerifyPolicy.accept
<simhash_pg.verify.rule.VerifyPolicy.accept>`). So a verified look-up asks
the index at the policy's radius (wider than k for short texts, and for
every text under ``"all"``), adds the rows whose sentence signature equals
the query's (when the policy uses signatures), and keeps what the rule
accepts, nearest first, ties by id: the order ``near()`` has without
verification.

Single adds, ``near`` and ``near_many`` look up stored rows with
:func:`lookup`; a batch looks up its stored rows with it too, and its own
earlier rows through :func:`filter_candidates` (``simhash_pg/store/batch.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, cast

from simhash_pg.text.signatures import MINHASH_CAP, sentences_meet
from simhash_pg.verify.jaccard import VText
from simhash_pg.verify.rule import TEXT_LOST, StoredText, VerifyMode, VerifyPolicy, policy_for

__all__ = ["Candidate", "filter_candidates", "lookup", "text_and_vtext", "texts_and_vtexts"]

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
           " %s::bigint[], %s, %s::boolean[])")
# One probed query (a text near() or add()): the lean single form (revisions
# 0014, 0015), the same rows without the query number.
# The arrays go as text literals (_int_array): psycopg's dumping of five
# lists cost ~25 us a query, a fifth of what the single form's SQL takes.
_PROBES_ONE = ("SELECT 1, * FROM simhash_near_probes_candidates(%s, %s::smallint[],"
               " %s::smallint[], %s::smallint[], %s::smallint[], %s, %s, %s::bigint[],"
               " %s::bigint[], %s, %s)")


class Candidate(NamedTuple):
    """A row the index returned for a query, and what the rule reads of it.

    A NamedTuple: a look-up builds many, and a frozen dataclass costs several
    times as much to build.
    """

    id: int
    key: str | None
    distance: int
    meta: dict[str, Any] | None = None
    text: StoredText = None  # its verification text; None: not kept; TEXT_LOST
    # its sentence signature equals the query's, or it holds one of the
    # query's sentence hashes (simhash_pg.text.signatures.sentences_meet)
    signature_match: bool = False


def text_and_vtext(fingerprinter: Any, text: str, policy: VerifyPolicy) -> tuple[int, VText]:
    """One text's fingerprint and VText (with probe values when the policy probes texts).

    One normalisation and one vote; raises as ``Fingerprinter.fingerprint``.
    """
    norm = fingerprinter.normalize(text)
    feats = fingerprinter.feature_text(text, norm)
    if policy.probes_texts:
        fp, probes = fingerprinter._probes(feats, policy.probe_depth)
        return fp, policy.with_probes(policy.prepare(norm), probes)
    return fingerprinter._vote(feats), policy.prepare(norm)


def texts_and_vtexts(
    fingerprinter: Any, texts: list[Any], policy: VerifyPolicy, workers: int | None = None,
    *, probes: bool = True,
) -> list[tuple[int | None, VText | None]]:
    """:func:`text_and_vtext` of many texts (in worker processes if worth it); None, None
    for a text without a fingerprint. ``probes=False``: no probe values even when
    the policy probes texts (a writer that looks nothing up: bulk_load)."""
    if not (probes and policy.probes_texts):
        return cast(list[tuple[int | None, VText | None]],
                    fingerprinter.fingerprint_many_also(texts, policy.prepare, workers))
    got = fingerprinter.fingerprint_many_probes(texts, policy.prepare, policy.probe_depth,
                                                  workers)
    return [(fp, policy.with_probes(vt, probes) if vt is not None else None)
            for fp, vt, probes in got]


def filter_candidates(
    query_norm: str,
    candidates: Iterable[Candidate],
    k: int,
    policy: VerifyPolicy | VerifyMode,
    *,
    probed: bool = False,
) -> list[Candidate]:
    """The candidates the rule accepts, nearest first, ties by id.

    ``probed``: the candidates came from the query's probes (and signature).
    For ``add(dedup=True)``: the first one, if any, is the document it duplicates.
    """
    cands = list(candidates)
    verdicts = policy_for(policy).accept(
        query_norm, [(c.text, c.distance, c.signature_match) for c in cands], k, probed=probed)
    kept = [c for c, ok in zip(cands, verdicts, strict=True) if ok]
    kept.sort(key=lambda c: (c.distance, c.id))
    return kept


def lookup(
    conn: Any,
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
               if policy.signature else [])
    # (statement, parameters) per look-up; several go in one pipeline, one alone
    # (a pipeline costs a round trip's worth of bookkeeping)
    todo: list[tuple[str, list[Any]]] = []
    if len(probed) == 1:
        (i,) = probed
        probes = texts[i].probes
        assert probes is not None
        hashes, minhash = _keys(texts[i]) if policy.signature else ((), ())
        todo.append((_PROBES_ONE, [fps[i], *map(_int_array, probes),
                                   max(k, policy.probe_cap),
                                   texts[i].sig if policy.signature else None,
                                   _int_array(hashes) if hashes else None,
                                   _int_array(minhash) if minhash else None, MINHASH_CAP,
                                   policy.probes_pairs(texts[i].text)]))
    elif probed:
        todo.append((_PROBES, [
            [fps[i] for i in probed],
            _probe_array([texts[i].probes for i in probed]),  # type: ignore[misc]
            [max(k, policy.probe_cap)] * len(probed),
            [texts[i].sig for i in probed] if policy.signature else None,
            *_key_rows([texts[i] for i in probed], bool(policy.signature)), MINHASH_CAP,
            [policy.probes_pairs(texts[i].text) for i in probed],
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
    out: list[list[Candidate]] = []
    for i in range(n):
        qt = texts[i]
        found = (
            Candidate(id_, key, dist, meta, TEXT_LOST if lost else vtext,
                      sentences_meet(qt.sig, qt.hashes, sig, hashes, qt.minhash, dist))
            for id_, key, dist, meta, vtext, sig, hashes, lost in rows[i].values()
        )
        out.append(filter_candidates(qt.text, found, k, policy, probed=i in is_probed))
    return out


def _int_array(values: Sequence[int]) -> str:
    """A one-dimensional array of ints as PostgreSQL's text literal."""
    return "{" + ",".join(map(str, values)) + "}"


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
    width = max((len(b) for p in probes for b in p), default=0)
    return "{" + ",".join(
        "{" + ",".join("{" + ",".join([*map(str, b), *["NULL"] * (width - len(b))]) + "}"
                       for b in p) + "}"
        for p in probes
    ) + "}"
