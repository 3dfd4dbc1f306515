"""Margin-ranked probes: the block values a near-duplicate's fingerprint most likely has.

A SimHash bit is the sign of a weighted vote (:func:`simhash_pg.text.simhash.vote_with_margins`).
Its *margin*, the vote before the sign, says how stable the bit is: a small
edit moves every margin a little, so the bits that flip are mostly those whose
margin is near zero. A query therefore need not probe every value within a
Hamming radius of its blocks: it can probe, per 16-bit block, the few values
reached by flipping its least stable bits.

The probe set of a block, for a budget of ``t`` values:

1. every bit ``j`` of the block costs ``m_j ** 2`` (``cost="squared"``; the
   log-odds of a flip under Gaussian noise on the margin grow like ``m**2``)
   or ``|m_j|`` (``cost="absolute"``), as exact Python ints;
2. a subset of the block's 16 bits costs the sum of its bits' costs; the
   ``t`` cheapest subsets, flipped in the block, are its probe values. The
   empty subset (the block itself) costs 0 and always comes first;
3. ties (equal cost) go to fewer flipped bits, then by the subset's mask in
   *rank space*: the block's bits sorted by (cost, bit position), the cheapest
   bit weighing 1, the next 2, and so on. So the set is a deterministic
   function of the margins and ``t``, never of hashing or platform.

The subsets come from a best-first walk of the tree in which a subset's
children extend it with the next-ranked bit or move its last bit one rank up
(each subset has exactly one parent, and a child's key is never below its
parent's): ``O(t log t)`` per block instead of all 65,536 subsets.

Blocks follow :mod:`simhash_pg.bits`: ``b0`` holds bits 48-63 of the unsigned
fingerprint, ``b3`` bits 0-15, and probe values are returned as the
``smallint`` column values (``block - 32768``). ``margins[j]`` belongs to bit
``j`` (bit 0 the least significant), as
:func:`simhash_pg.text.simhash.vote_with_margins` returns them. This module
sits below :mod:`simhash_pg.text.simhash`, which calls it: it imports no fingerprinting.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Literal

import numpy as np
import numpy.typing as npt

from simhash_pg.bits import (
    BLOCK_BITS,
    BLOCK_OFFSET,
    BLOCK_SHIFTS,
    BLOCKS,
    blocks,
    check_fingerprint,
    raw_blocks,
)

__all__ = [
    "COSTS",
    "BitCost",
    "Probes",
    "bit_costs",
    "block_bits",
    "block_probes",
    "cheapest_flips",
    "iter_flips",
    "probe_hits",
    "probe_meets",
    "probes_meet",
]

# Probe values of b0..b3 (smallint column values), as block_probes gives them.
Probes = tuple[list[int], list[int], list[int], list[int]]
BitCost = Literal["squared", "absolute"]
COSTS: tuple[BitCost, ...] = ("squared", "absolute")


Margins = Sequence[int] | npt.NDArray[np.integer]


def bit_costs(margins: Margins, cost: BitCost = "squared") -> list[int]:
    """The exact cost of flipping each bit: ``m**2`` or ``|m|`` (Python ints, no overflow)."""
    if cost not in COSTS:
        raise ValueError(f"cost must be one of {', '.join(COSTS)}, got {cost!r}")
    ms = (margins.tolist() if isinstance(margins, np.ndarray) and margins.dtype.kind in "iu"
          else [int(m) for m in margins])
    return [m * m for m in ms] if cost == "squared" else [abs(m) for m in ms]


def block_bits(i: int) -> range:
    """Fingerprint bit positions of block ``b_i`` (``b0``: 48..63), least significant first."""
    if not 0 <= i < BLOCKS:
        raise ValueError(f"block index must be 0..{BLOCKS - 1}, got {i}")
    return range(BLOCK_SHIFTS[i], BLOCK_SHIFTS[i] + BLOCK_BITS)


def iter_flips(costs: Sequence[float]) -> Iterator[tuple[float, int]]:
    """Every subset of ``len(costs)`` bits as ``(cost, mask)``, cheapest first.

    ``costs[j]`` is bit ``j``'s cost (>= 0); a subset costs the sum of its
    bits' costs; ties by the module's rule (fewer bits, then the rank-space
    mask). Lazy: taking ``t`` items costs ``O(t log t)`` after one sort.
    """
    if any(not c >= 0 for c in costs):  # NaN fails too
        raise ValueError("bit costs must be >= 0")
    return _walk(costs)


def _walk(costs: Sequence[float]) -> Iterator[tuple[float, int]]:
    """:func:`iter_flips` without the check (costs known to be >= 0)."""
    n = len(costs)
    # rank -> bit position: by (cost, position), as sorted() is stable
    order = sorted(range(n), key=costs.__getitem__)
    c = [costs[j] for j in order]
    yield 0, 0
    if not n:
        return
    # Heap items: (cost, size, rank mask, last rank, bit mask). The key
    # (cost, size, rank mask) is strictly larger in each child than in its
    # parent, so popping in key order lists every subset once, in order.
    heap: list[tuple[float, int, int, int, int]] = [(c[0], 1, 1, 0, 1 << order[0])]
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        cost, size, rmask, last, mask = pop(heap)
        yield cost, mask
        nxt = last + 1
        if nxt < n:
            bit = 1 << order[nxt]
            # extend with the next-ranked bit
            push(heap, (cost + c[nxt], size + 1, rmask | 1 << nxt, nxt, mask | bit))
            # move the last bit one rank up
            push(heap, (cost - c[last] + c[nxt], size, rmask ^ (1 << last) ^ (1 << nxt), nxt,
                        mask ^ (1 << order[last]) ^ bit))


def cheapest_flips(costs: Sequence[float], t: int) -> list[int]:
    """Masks of the ``t`` cheapest subsets of the bits (see :func:`iter_flips`); 0 first."""
    if isinstance(t, bool) or not isinstance(t, int) or t < 0:
        raise ValueError(f"the probe budget must be an int >= 0, got {t!r}")
    return [mask for _, mask in islice(iter_flips(costs), t)]


def block_probes(
    fp: int,
    margins: Margins,
    t: int | Sequence[int],
    cost: BitCost = "squared",
) -> Probes:
    """The probe values of ``b0..b3`` (smallint column values), cheapest first.

    ``t`` is the budget per block, or four budgets (one per block). The first
    value of each block is the fingerprint's own block value; the others are
    it with the cheapest subsets of the block's bits flipped.
    """
    if len(margins) != BLOCKS * BLOCK_BITS:
        raise ValueError(f"expected {BLOCKS * BLOCK_BITS} margins, got {len(margins)}")
    budgets = [t] * BLOCKS if isinstance(t, int) else list(t)
    if len(budgets) != BLOCKS:
        raise ValueError(f"expected one budget or {BLOCKS}, got {len(budgets)}")
    value = check_fingerprint(fp)
    signs = np.packbits(np.asarray(margins) > 0, bitorder="little")
    if int.from_bytes(signs.tobytes(), "little") != value:
        raise ValueError("margins do not belong to this fingerprint: bit j must be set "
                         "exactly where margins[j] > 0")
    costs = bit_costs(margins, cost)
    values = raw_blocks(value)
    out: list[list[int]] = []
    for i in range(BLOCKS):
        t_i = budgets[i]
        if isinstance(t_i, bool) or not isinstance(t_i, int) or t_i < 0:
            raise ValueError(f"the probe budget must be an int >= 0, got {t_i!r}")
        lo = BLOCK_SHIFTS[i]
        # costs are squares or absolute values of ints: no check needed
        walk = _walk(costs[lo : lo + BLOCK_BITS])
        out.append([(values[i] ^ m) - BLOCK_OFFSET for _, m in islice(walk, t_i)])
    return out[0], out[1], out[2], out[3]


def probe_meets(
    probes: Sequence[Sequence[int]],
    blocks: npt.NDArray[np.int64],
    *,
    query_fp: int | None = None,
    pairs: bool = False,
    lead: int | None = None,
) -> npt.NDArray[np.bool_]:
    """Where a text query's probes meet rows, before its Hamming cap: an ``(n, 4)``
    array, the rule ``simhash_near_probes_candidates`` searches by
    (sql/current/near_probes.sql), and the one definition of it outside the SQL.

    ``probes``: the query's values of ``b0..b3`` (smallint column values);
    ``blocks``: the rows' ``(n, 4)`` block values (:func:`simhash_pg.bits.blocks_array`).
    Single blocks: column ``i`` is block ``i``'s value among the query's probes
    of it. ``pairs`` (revision 0019; needs ``query_fp``): column ``i`` is the pair
    of blocks ``i`` and ``i + 1`` (cyclic): block ``i`` among its probes or the
    query's own value, and block ``i + 1`` among its probes, the query's own
    value or a one-bit flip of it; so every row within 3 bits meets whatever
    the probes (the pair lemma). ``lead`` (revision 0024): only the first
    ``lead`` of block ``i``'s probes lead its pair (its own value always does);
    None: all of them.
    """
    if len(probes) != BLOCKS:
        raise ValueError(f"expected the probe values of {BLOCKS} blocks, got {len(probes)}")
    single = np.stack([np.isin(blocks[:, i], np.asarray(probes[i], dtype=np.int64))
                       for i in range(BLOCKS)], axis=1)
    if not pairs:
        return single
    if query_fp is None:
        raise ValueError("pair probes need the query's fingerprint (its own block values)")
    own = raw_blocks(check_fingerprint(query_fp))
    leading = single if lead is None else np.stack(
        [np.isin(blocks[:, i], np.asarray(probes[i][:lead], dtype=np.int64))
         for i in range(BLOCKS)], axis=1)
    leading = leading | (blocks == np.asarray(own, dtype=np.int64) - BLOCK_OFFSET)
    flips = (0, *(1 << j for j in range(16)))
    second = single | np.stack(
        [np.isin(blocks[:, i], np.asarray([(own[i] ^ m) - BLOCK_OFFSET for m in flips],
                                          dtype=np.int64)) for i in range(BLOCKS)], axis=1)
    met: npt.NDArray[np.bool_] = leading & np.roll(second, -1, axis=1)
    return met


def probe_hits(
    query_fp: int,
    probes: Sequence[Sequence[int]],
    blocks: npt.NDArray[np.int64],
    *,
    pairs: bool = False,
    lead: int | None = None,
) -> npt.NDArray[np.bool_]:
    """Which rows a text query's probes reach, before its Hamming cap (:func:`probe_meets`)."""
    met = probe_meets(probes, blocks, query_fp=query_fp, pairs=pairs, lead=lead)
    return np.asarray(met.any(axis=1), dtype=bool)


def probes_meet(
    probes: Sequence[Sequence[int]], fingerprint: int, *, query_fp: int | None = None,
    pairs: bool = False, lead: int | None = None,
) -> list[int]:
    """Where a stored fingerprint meets a query's probes (:func:`probe_meets`): the
    blocks, or with ``pairs`` the first block of each pair, in block order. A row
    is a probe candidate of the query when any meets (and its distance is within
    the cap); :mod:`simhash_pg.verify.evidence` explains a look-up with it.
    """
    row = np.asarray([blocks(fingerprint)], dtype=np.int64)
    met = probe_meets(probes, row, query_fp=query_fp, pairs=pairs, lead=lead)[0]
    return [i for i in range(BLOCKS) if met[i]]
