"""Near-duplicate look-up among the rows stored so far in one add_many batch.

The database cannot see a batch's own rows before its COPY, so the batch
keeps them here: k <= 3 by pigeonhole on the four 16-bit blocks (a dict per
block), any radius by a NumPy scan over the batch's fingerprints, which is
small. Verification (store/batch.py) reads each row's kept text and
sentence signature from here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simhash_pg.bits import BLOCK_BITS, BLOCKS, raw_blocks

__all__ = ["BatchIndex", "Hit"]

# (distance, id, key) of a match: tuples compare nearest first, then lowest id.
Hit = tuple[int, int, str | None]


class BatchIndex:
    """The rows of one batch so far, by position; ``scan`` keeps the NumPy array."""

    def __init__(self, k: int, *, scan: bool = False) -> None:
        self.k = k
        self.scan = scan or k > 3  # keep the NumPy array (any radius) rather than block dicts
        self.arr: Any = None  # uint64 fingerprints for the scan, grown by doubling
        self.fps: list[int] = []
        self.ids: list[int] = []
        self.keys: list[str | None] = []
        self.by_block: list[dict[int, list[int]]] = [{}, {}, {}, {}]
        # what each row keeps for verification, and the rows by sentence signature
        self.vtexts: list[str | None] = []
        self.sigs: list[int | None] = []
        self.by_sig: dict[int, list[int]] = {}

    def add(self, fp: int, id_: int, key: str | None,
            vtext: str | None = None, sig: int | None = None) -> None:
        pos = len(self.fps)
        self.fps.append(fp)
        self.ids.append(id_)
        self.keys.append(key)
        self.vtexts.append(vtext)
        self.sigs.append(sig)
        if sig is not None:
            self.by_sig.setdefault(sig, []).append(pos)
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
        """The nearest row within k, ties by id, or None."""
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
        d = self._distances(fp)
        ok = np.nonzero(d <= self.k)[0]
        if len(ok) == 0:
            return None
        # nearest, ties by id (ids grow with position)
        pos = int(ok[np.argmin(d[ok])])
        return (int(d[pos]), self.ids[pos], self.keys[pos])

    def within(self, fp: int, radius: int) -> list[tuple[int, int]]:
        """(position, distance) of every row within ``radius`` (needs ``scan``)."""
        if not self.fps:
            return []
        d = self._distances(fp)
        ok = np.nonzero(d <= radius)[0]
        return [(int(p), int(d[p])) for p in ok]

    def probed(self, fp: int, probes: Sequence[Sequence[int]], cap: int) -> list[tuple[int, int]]:
        """(position, distance) of every row within ``cap`` with a probed value in some block.

        ``probes``: the smallint values of b0..b3, as ``simhash_near_probes`` takes them.
        """
        if not self.fps:
            return []
        d = self._distances(fp)
        arr = self.arr[: len(self.fps)]
        hit = np.zeros(len(self.fps), dtype=bool)
        for i, values in enumerate(probes):
            shift = np.uint64(BLOCK_BITS * (BLOCKS - 1 - i))
            block = ((arr >> shift) & np.uint64(0xFFFF)).astype(np.int64) - (1 << 15)
            hit |= np.isin(block, np.asarray(values, dtype=np.int64))
        ok = np.nonzero(hit & (d <= cap))[0]
        return [(int(p), int(d[p])) for p in ok]

    def same_signature(self, fp: int, sig: int) -> list[tuple[int, int]]:
        """(position, distance) of every row whose sentence signature is ``sig``."""
        return [(pos, (self.fps[pos] ^ fp).bit_count()) for pos in self.by_sig.get(sig, ())]

    def _distances(self, fp: int) -> Any:
        x = self.arr[: len(self.fps)] ^ np.uint64(fp)
        if hasattr(np, "bitwise_count"):
            return np.bitwise_count(x).astype(np.int64)
        return np.array([int(v).bit_count() for v in x.tolist()], dtype=np.int64)  # NumPy < 2
