"""Verified look-ups for the store: index candidates re-checked by ``simhash_pg.verify``.

The index answers "which fingerprints lie within r bits"; verification then
decides which of those are near-duplicates (:func:`simhash_pg.verify.accept`).
So a verified look-up asks the index at the radius :func:`~simhash_pg.verify.query_k`
gives (wider than k for short texts, and for every text under ``"all"``),
adds the rows whose sentence signature equals the query's (``"all"`` only),
and keeps what :func:`~simhash_pg.verify.accept` accepts, nearest first, ties
by id: the order ``near()`` has without verification.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simhash_pg.text.normalize import normalize
from simhash_pg.text.signatures import sentence_signature_normalized
from simhash_pg.verify.rule import (
    TEXT_LOST,
    VERIFY_MODES,
    VerifyMode,
    alnum_only,
    filter_candidates,
    keep_text,
    query_k,
)

__all__ = [
    "Candidate",
    "VText",
    "candidates",
    "from_norm",
    "from_norm_sig",
    "prepare",
    "stored_fields",
    "stronger",
]

# Candidates within radius of each query, with what verification reads. The
# last column: the row's verification data was lost (stored before revision
# 0003 added the columns, as simhash_meta's 'unverified_rows' records, see
# sql/0003_verification.sql), so verify.accept judges it by distance alone.
_NEAR = (
    "SELECT n.query, n.id, n.key, n.distance, d.meta, d.verify_text, d.sentence_sig,"
    " coalesce(d.verify_text IS NULL AND d.id <= (u.value->>'max_id')::bigint"
    " AND d.created_at <= (u.value->>'stored_until')::timestamptz, false)"
    " FROM simhash_near_many(%s, %s) AS n JOIN simhash_documents d ON d.id = n.id"
    " LEFT JOIN simhash_meta u ON u.name = 'unverified_rows'"
)
# Rows whose sentence signature equals a query's, whatever their distance
# (never a lost row: it has no signature).
_SIG = (
    "SELECT q.o::integer, d.id, d.key, simhash_hamming(d.fingerprint, q.fp), d.meta,"
    " d.verify_text, d.sentence_sig, false"
    " FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY AS q (fp, sig, o)"
    " JOIN simhash_documents d ON d.sentence_sig = q.sig"
)


@dataclass(frozen=True, slots=True)
class VText:
    """What verification needs of one text document."""

    text: str  # the verification text (verify.verification_text)
    sig: int | None  # signed sentence signature, computed under "all" only


@dataclass(frozen=True, slots=True)
class Candidate:
    """A stored row the index returned for a query, and its distance."""

    id: int
    key: str | None
    distance: int
    meta: dict[str, Any] | None


def stronger(a: VerifyMode, b: VerifyMode) -> VerifyMode:
    """The mode that keeps more text: what a writer keeps when two modes meet."""
    return a if VERIFY_MODES.index(a) >= VERIFY_MODES.index(b) else b


def prepare(text: str, *, html: bool, t2s: bool, signature: bool) -> VText:
    """Verification text (and signature) of a document; one normalisation for both."""
    norm = normalize(text, html=html, t2s=t2s)
    return from_norm_sig(norm) if signature else from_norm(norm)


# For Fingerprinter.fingerprint_many_also: module-level, so workers can run them.
def from_norm(norm: str) -> VText:
    """VText of an already normalised text, without a signature."""
    return VText(alnum_only(norm), None)


def from_norm_sig(norm: str) -> VText:
    """VText of an already normalised text, with its sentence signature."""
    return VText(alnum_only(norm), sentence_signature_normalized(norm))


def stored_fields(v: VText | None, keep: VerifyMode) -> tuple[str | None, int | None]:
    """The (verify_text, sentence_sig) a row stores under the keep mode."""
    if v is None or keep == "off":
        return None, None
    return (v.text if keep_text(v.text, keep) else None), (v.sig if keep == "all" else None)


def candidates(
    conn: Any,
    fps: Sequence[int],
    texts: Sequence[VText],
    k: int,
    mode: VerifyMode,
) -> list[list[Candidate]]:
    """Per query (signed fingerprint + its VText): the accepted stored rows, nearest first.

    One round trip: a ``simhash_near_many`` per distinct radius (at most two),
    and the signature look-up, pipelined.
    """
    n = len(fps)
    radius = [query_k(t.text, k, mode) for t in texts]
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(radius):
        groups.setdefault(r, []).append(i)
    sig_pos = [i for i, t in enumerate(texts) if t.sig is not None] if mode == "all" else []
    with conn.pipeline():
        curs = [
            (pos, conn.execute(_NEAR, [[fps[i] for i in pos], r], prepare=True))
            for r, pos in groups.items()
        ]
        c_sig = (
            conn.execute(_SIG, [[fps[i] for i in sig_pos], [texts[i].sig for i in sig_pos]],
                         prepare=True)
            if sig_pos else None
        )
    rows: list[dict[int, tuple[Any, ...]]] = [{} for _ in range(n)]
    for pos, cur in curs:
        for q, *row in cur.fetchall():
            rows[pos[q - 1]][row[0]] = tuple(row)
    if c_sig is not None:
        for q, *row in c_sig.fetchall():
            rows[sig_pos[q - 1]].setdefault(row[0], tuple(row))
    out: list[list[Candidate]] = []
    for i in range(n):
        qt = texts[i]
        # ordered by (distance, id) first: filter_candidates keeps ties in order
        found = sorted(rows[i].values(), key=lambda r: (r[2], r[0]))
        kept = filter_candidates(
            qt.text,
            ((Candidate(id_, key, dist, meta), dist, TEXT_LOST if lost else vtext,
              qt.sig is not None and sig == qt.sig)
             for id_, key, dist, meta, vtext, sig, lost in found),
            k, mode,
        )
        out.append([c for c, _ in kept])
    return out
