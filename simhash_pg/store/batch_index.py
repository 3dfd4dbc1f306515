"""Near-duplicate look-up among the rows stored so far in one add_many batch.

The database cannot see a batch's own rows before its COPY, so the batch
keeps them here: k <= 3 by pigeonhole on the four 16-bit blocks (a dict per
block), any radius by a NumPy scan over the batch's fingerprints, which is
small. Verification (store/batch.py) reads each row's kept text and
sentence signature from here too.

Neither decides what a duplicate is: a fingerprint-only row is a duplicate
by the policy's :meth:`~simhash_pg.verify.rule.VerifyPolicy.fingerprint_test`
(``distance <= k``), which both take; a text is decided by the policy's
``accept`` over the candidates :meth:`BatchIndex.within`,
:meth:`BatchIndex.probed` and :meth:`BatchIndex.same_sentences` gather.

:class:`EarlierPairs` serves the common case (k <= 3, fingerprints only)
faster: NumPy finds every pair of the batch within k up front, by the same
pigeonhole (a shared block), so the per-document loop only looks at the few
earlier rows within k and asks which of them were stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from simhash_pg.bits import (
    BLOCK_SHIFTS,
    PIGEONHOLE_K,
    blocks_array,
    hamming_array,
    raw_blocks,
)
from simhash_pg.text.probes import probe_hits
from simhash_pg.verify.pairtest import PairTest

__all__ = ["BatchIndex", "EarlierPairs", "Hit"]

# EarlierPairs gives up (the caller uses BatchIndex) past this many same-block
# pairs: a batch of many equal blocks (copies of one text) is quadratic either way.
PAIR_LIMIT = 1_000_000

# (distance, id, key) of a match: tuples compare nearest first, then lowest id.
Hit = tuple[int, int, str | None]


def _radius(test: PairTest) -> int:
    """The radius of a fingerprint test: the distance alone decides it."""
    if test.threshold is not None or test.signature:
        raise ValueError(f"a fingerprint-only test decides by distance alone, got {test}")
    return test.radius


class BatchIndex:
    """The rows of one batch so far, by position; ``scan`` keeps the NumPy array.

    ``test``: the policy's test of a fingerprint-only pair (:meth:`nearest`).
    """

    def __init__(self, test: PairTest, *, scan: bool = False) -> None:
        self.k = _radius(test)
        # keep the NumPy array (any radius) rather than block dicts
        self.scan = scan or self.k > PIGEONHOLE_K
        # the fingerprints for the scan, grown by doubling
        self.arr: npt.NDArray[np.uint64] | None = None
        self.fps: list[int] = []
        self.ids: list[int] = []
        self.keys: list[str | None] = []
        self.by_block: list[dict[int, list[int]]] = [{}, {}, {}, {}]
        # what each row keeps for verification, and the rows by sentence signature
        self.vtexts: list[str | None] = []
        self.sigs: list[int | None] = []
        self.hashes: list[list[int] | None] = []
        self.by_sig: dict[int, list[int]] = {}
        self.by_hash: dict[int, list[int]] = {}

    def add(self, fp: int, id_: int, key: str | None,
            vtext: str | None = None, sig: int | None = None,
            hashes: list[int] | None = None) -> None:
        pos = len(self.fps)
        self.fps.append(fp)
        self.ids.append(id_)
        self.keys.append(key)
        self.vtexts.append(vtext)
        self.sigs.append(sig)
        self.hashes.append(hashes)
        if sig is not None:
            self.by_sig.setdefault(sig, []).append(pos)
        for h in hashes or ():
            self.by_hash.setdefault(h, []).append(pos)
        if not self.scan:
            # fp was range-checked already: the unchecked blocks, hot loop
            for i, b in enumerate(raw_blocks(fp)):
                self.by_block[i].setdefault(b, []).append(pos)
        else:
            if self.arr is None or pos >= len(self.arr):
                grown = np.zeros(max(1024, 2 * pos), dtype=np.uint64)
                if self.arr is not None:
                    grown[:pos] = self.arr[:pos]
                self.arr = grown
            self.arr[pos] = fp

    def nearest(self, fp: int) -> Hit | None:
        """The nearest row within k (the fingerprint test's radius), ties by id, or None."""
        if not self.fps:
            return None
        if not self.scan:
            cands: set[int] = set()
            for i, b in enumerate(raw_blocks(fp)):
                cands.update(self.by_block[i].get(b, ()))
            best: Hit | None = None
            for pos in cands:
                d = (self.fps[pos] ^ fp).bit_count()
                if d <= self.k and (best is None or (d, self.ids[pos]) < best[:2]):
                    best = (d, self.ids[pos], self.keys[pos])
            return best
        dist = self._distances(fp)
        ok = np.nonzero(dist <= self.k)[0]
        if len(ok) == 0:
            return None
        # nearest, ties by id (ids grow with position)
        pos = int(ok[np.argmin(dist[ok])])
        return (int(dist[pos]), self.ids[pos], self.keys[pos])

    def within(self, fp: int, radius: int) -> list[tuple[int, int]]:
        """(position, distance) of every row within ``radius`` (needs ``scan``)."""
        if not self.fps:
            return []
        d = self._distances(fp)
        ok = np.nonzero(d <= radius)[0]
        return [(int(p), int(d[p])) for p in ok]

    def probed(
        self, fp: int, probes: Sequence[Sequence[int]], cap: int, *, pairs: bool = False,
        lead: int | None = None,
    ) -> list[tuple[int, int]]:
        """(position, distance) of every row within ``cap`` that the probes reach
        (:func:`simhash_pg.text.probes.probe_hits`, single blocks or ``pairs`` led by
        ``lead`` values).

        ``probes``: the smallint values of b0..b3, as ``simhash_near_probes`` takes them.
        """
        if not self.fps:
            return []
        d = self._distances(fp)
        assert self.arr is not None
        hit = probe_hits(fp, probes, blocks_array(self.arr[: len(self.fps)]), pairs=pairs,
                         lead=lead)
        ok = np.nonzero(hit & (d <= cap))[0]
        return [(int(p), int(d[p])) for p in ok]

    def same_sentences(
        self, fp: int, sig: int | None, hashes: tuple[int, ...] | list[int] = ()
    ) -> list[tuple[int, int]]:
        """(position, distance) of every row whose sentence signature is ``sig`` or
        that holds one of ``hashes`` (:func:`simhash_pg.text.signatures.sentences_meet`).

        Unlike the database's look-up, no cap on how many rows share a hash:
        a batch is small, and its rows are verified like any candidate.
        """
        found = dict.fromkeys(self.by_sig.get(sig, ()) if sig is not None else ())
        for h in hashes:
            found.update(dict.fromkeys(self.by_hash.get(h, ())))
        return [(pos, (self.fps[pos] ^ fp).bit_count()) for pos in sorted(found)]

    def _distances(self, fp: int) -> npt.NDArray[np.int64]:
        assert self.arr is not None  # a scanning index keeps its array from the first row
        x = self.arr[: len(self.fps)] ^ np.uint64(fp)
        if hasattr(np, "bitwise_count"):
            counted: npt.NDArray[np.int64] = np.bitwise_count(x).astype(np.int64)
            return counted
        return np.array([int(v).bit_count() for v in x.tolist()], dtype=np.int64)  # NumPy < 2


class EarlierPairs:
    """The rows within k (<= PIGEONHOLE_K) of each batch position among earlier positions,
    by NumPy; k is the radius of the policy's fingerprint test.

    ``nearest(t)``: the nearest row stored so far (``add``) among the earlier
    positions within k of position t, ties by id; what BatchIndex.nearest
    answers when the rows were added in position order.
    """

    def __init__(self, earlier: dict[int, list[tuple[int, int]]]) -> None:
        self.earlier = earlier  # position -> [(earlier position, distance)]
        self.stored: dict[int, tuple[int, str | None]] = {}  # position -> (id, key)

    @classmethod
    def of(cls, fps: Sequence[int], test: PairTest,
           limit: int = PAIR_LIMIT) -> EarlierPairs | None:
        """The pairs of unsigned ``fps`` that meet the fingerprint ``test``; None past
        ``limit`` candidate pairs."""
        k = _radius(test)
        if k > PIGEONHOLE_K:
            raise ValueError(f"EarlierPairs needs k <= {PIGEONHOLE_K} "
                             "(pigeonhole on whole blocks)")
        arr = np.asarray(fps, dtype=np.uint64)
        n = len(arr)
        firsts: list[Any] = []
        seconds: list[Any] = []
        total = 0
        for shift in BLOCK_SHIFTS:
            block = (arr >> np.uint64(shift)) & np.uint64(0xFFFF)
            order = np.argsort(block, kind="stable")  # positions ascend within a value
            sorted_block = block[order]
            starts = np.flatnonzero(np.r_[True, sorted_block[1:] != sorted_block[:-1]])
            group_start = np.repeat(starts, np.diff(np.r_[starts, n]))
            rank = np.arange(n) - group_start  # earlier members of the same value
            count = int(rank.sum())
            total += count
            if total > limit:
                return None
            if count == 0:
                continue
            # sorted index t pairs with group_start[t] .. t - 1
            later = np.repeat(np.arange(n), rank)
            offset = np.arange(count) - np.repeat(np.cumsum(rank) - rank, rank)
            firsts.append(order[group_start[later] + offset])
            seconds.append(order[later])
        earlier: dict[int, list[tuple[int, int]]] = {}
        if firsts:
            first = np.concatenate(firsts)
            second = np.concatenate(seconds)
            dist = hamming_array(arr[first], arr[second])
            near = dist <= k
            # a pair sharing several blocks was found once per block
            pairs = np.unique(np.stack([second[near], first[near], dist[near]], axis=1), axis=0)
            for later_pos, earlier_pos, d in pairs.tolist():
                earlier.setdefault(later_pos, []).append((earlier_pos, d))
        return cls(earlier)

    def nearest(self, t: int) -> Hit | None:
        best: Hit | None = None
        for pos, d in self.earlier.get(t, ()):
            row = self.stored.get(pos)
            if row is not None and (best is None or (d, row[0]) < best[:2]):
                best = (d, row[0], row[1])
        return best

    def add(self, t: int, id_: int, key: str | None) -> None:
        self.stored[t] = (id_, key)
