"""near and near_many: index look-ups, verified as the store's policy says.

A fingerprint query, or a text under verify mode ``"off"``, is answered by
``simhash_near`` / ``simhash_near_many`` alone: Hamming distance <= k, exact.
A verified text asks :func:`simhash_pg.store.lookup.lookup`, which
widens the radius and keeps what the duplicate rule accepts.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, cast

import psycopg

from simhash_pg.bits import to_signed, to_signed_list
from simhash_pg.store import sql
from simhash_pg.store.checks import check_document
from simhash_pg.store.lookup import lookup
from simhash_pg.store.results import Match, Pair
from simhash_pg.text.simhash import Fingerprinter
from simhash_pg.verify import VerifyPolicy, VText
from simhash_pg.verify.candidates import texts_and_vtexts

__all__ = ["near", "near_many", "pairs"]


def near(conn: psycopg.Connection[Any], fp: int, vt: VText | None, k: int, limit: int | None,
         policy: VerifyPolicy) -> list[Match]:
    """Stored rows near one query (``vt``: its VText when verified), nearest first."""
    if vt is not None:
        found = lookup(conn, [to_signed(fp)], [vt], k, policy)[0]
        return [Match(c.id, c.key, c.distance, c.meta) for c in found[:limit]]
    rows = conn.execute(sql.NEAR, [to_signed(fp), k, limit], prepare=True).fetchall()
    return [Match(r[0], r[1], r[2], r[3]) for r in rows]


def near_many(conn: psycopg.Connection[Any], items: list[Any], k: int, fingerprinter: Fingerprinter,
              policy: VerifyPolicy) -> list[list[Match]]:
    """One list of matches per query, in query order: a round trip per kind of query."""
    vts: dict[int, VText] = {}
    fps = _fingerprints(items, fingerprinter, policy, vts if policy.verifies else None)
    out: list[list[Match]] = [[] for _ in fps]
    if not fps:
        return out
    signed = to_signed_list(fps)
    plain = [i for i in range(len(items)) if i not in vts]
    if plain:
        rows = conn.execute(sql.NEAR_MANY, [[signed[i] for i in plain], k],
                            prepare=True).fetchall()
        for q, id_, key, dist, meta in rows:
            out[plain[q - 1]].append(Match(id_, key, dist, meta))
    if vts:
        ver = sorted(vts)
        hits = lookup(conn, [signed[i] for i in ver], [vts[i] for i in ver], k, policy)
        for i, cands in zip(ver, hits, strict=True):
            out[i] = [Match(c.id, c.key, c.distance, c.meta) for c in cands]
    return out


def pairs(conn: psycopg.Connection[Any], k: int, itersize: int = 10_000
          ) -> Generator[Pair, None, None]:
    """Every stored pair within ``k``, streamed: a server-side cursor in one transaction.

    simhash_pairs is inlined into the cursor's query, so rows arrive while
    the scan runs, ``itersize`` a round trip, and the client holds one batch.
    """
    with conn.transaction(), conn.cursor(name="simhash_pairs") as cur:
        cur.itersize = itersize
        cur.execute(sql.PAIRS, [k])
        for a, b, distance in cur:
            yield Pair(a, b, distance)


def _fingerprints(items: list[Any], fingerprinter: Fingerprinter, policy: VerifyPolicy,
                  vtexts: dict[int, VText] | None) -> list[int]:
    """Fingerprints of queries, raising at the first bad one; texts' VTexts into ``vtexts``."""
    fps = [0 if isinstance(d, str) else cast(int, check_document(d)) for d in items]
    at = [i for i, d in enumerate(items) if isinstance(d, str)]
    texts = [items[i] for i in at]
    if not at:
        return fps
    if vtexts is None:
        for i, fp in zip(at, fingerprinter.fingerprint_many(texts), strict=True):
            fps[i] = fp
        return fps
    for i, (got, vt) in zip(at, texts_and_vtexts(fingerprinter, texts, policy),
                            strict=True):
        if got is None or vt is None:
            fingerprinter.fingerprint(items[i])  # raises why
            raise AssertionError("unreachable")
        fps[i], vtexts[i] = got, vt
    return fps
