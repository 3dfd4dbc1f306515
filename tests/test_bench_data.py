"""The benchmark data generators (lab.bench.hnsw): no database needed."""

from __future__ import annotations

import numpy as np
import pytest

from lab.bench.hnsw import (
    exact_neighbours,
    planted_data,
    random_masks,
    skewed_fingerprints,
    uniform_fingerprints,
)


def test_random_masks_have_exactly_the_asked_bits() -> None:
    rng = np.random.default_rng(1)
    flips = rng.integers(0, 65, size=500)
    masks = random_masks(flips, rng)
    assert masks.dtype == np.uint64
    assert (np.bitwise_count(masks) == flips).all()
    singles = random_masks(np.ones(300, dtype=np.int64), rng)
    assert len(set(singles.tolist())) > 50  # every bit position is used, not one


def test_uniform_fingerprints_use_all_64_bits() -> None:
    fps = uniform_fingerprints(10_000, np.random.default_rng(2))
    bits = np.unpackbits(fps.view(np.uint8)).reshape(-1, 64).mean(axis=0)
    assert np.all(np.abs(bits - 0.5) < 0.05)


def test_skew_puts_a_tenth_of_documents_into_one_percent_of_block_values() -> None:
    n = 200_000
    fps = skewed_fingerprints(n, np.random.default_rng(3))
    for shift in (48, 32, 16, 0):
        block = ((fps >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.int64)
        counts = np.sort(np.bincount(block, minlength=65536))[::-1]
        top = counts[:655].sum() / n  # the 1% most frequent values
        # 10% hot documents, plus the uniform share of those values (~1%)
        assert 0.09 < top < 0.13, (shift, top)
    uniform = uniform_fingerprints(n, np.random.default_rng(3))
    b0 = (uniform >> np.uint64(48)).astype(np.int64)
    assert np.sort(np.bincount(b0, minlength=65536))[::-1][:655].sum() / n < 0.03


@pytest.mark.parametrize("skew", [False, True])
@pytest.mark.parametrize("k", [0, 3, 6])
def test_planted_queries_have_known_neighbours(k: int, skew: bool) -> None:
    data = planted_data(20_000, 100, k, seed=k, skew=skew)
    assert data.stored.size == 20_000 and data.queries.size == 100
    truth = exact_neighbours(data.stored, data.queries, k)
    assert all(t.size >= 1 for t in truth)  # at least the centre
    for q, ids in zip(data.queries, truth, strict=True):
        assert (np.bitwise_count(data.stored[ids - 1] ^ q) <= k).all()
    if k > 0:  # some copies are just outside k of the query: recall is tested at the edge
        assert sum(t.size for t in truth) < 100 * 4


def test_planted_data_is_reproducible() -> None:
    a = planted_data(5_000, 50, 3, seed=9)
    b = planted_data(5_000, 50, 3, seed=9)
    assert (a.stored == b.stored).all() and (a.queries == b.queries).all()
