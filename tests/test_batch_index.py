"""The batch's own near-duplicates: EarlierPairs (NumPy, up front) against BatchIndex.

No database: both answer "the nearest row stored so far in this batch", and
add_many must decide the same way whichever of them it uses.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_pg.store.batch_index import BatchIndex, EarlierPairs
from simhash_pg.verify import VerifyPolicy
from simhash_pg.verify.pairtest import by_distance


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[int], list[bool], int]:
    rnd = random.Random(draw(st.integers(0, 2**32)))
    pool = [rnd.getrandbits(16) for _ in range(draw(st.integers(1, 4)))]
    fps: list[int] = []
    for _ in range(draw(st.integers(0, 60))):
        roll = rnd.random()
        if fps and roll < 0.4:  # a near or exact copy of an earlier one
            fp = rnd.choice(fps)
            for _ in range(rnd.randint(0, 5)):
                fp ^= 1 << rnd.randrange(64)
        elif roll < 0.7:  # blocks from a small pool: many shared blocks, ties
            fp = sum(rnd.choice(pool) << s for s in (48, 32, 16, 0))
        else:
            fp = rnd.getrandbits(64)
        fps.append(fp)
    stored = [rnd.random() < 0.7 for _ in fps]  # a skipped duplicate is not stored
    return fps, stored, draw(st.integers(0, 3))


@settings(max_examples=300, deadline=None)
@given(batches())
def test_earlier_pairs_answer_as_the_batch_index(data: tuple[list[int], list[bool], int]) -> None:
    fps, stored, k = data
    test = VerifyPolicy().fingerprint_test(k)  # what the batch asks the policy
    pairs = EarlierPairs.of(fps, test)
    assert pairs is not None
    index = BatchIndex(test)
    for t, fp in enumerate(fps):
        assert pairs.nearest(t) == index.nearest(fp), t
        if stored[t]:
            id_ = 100 + t  # ids grow with position, as the sequence gives them
            index.add(fp, id_, f"key{t}")
            pairs.add(t, id_, f"key{t}")


def test_earlier_pairs_give_up_past_the_limit_and_refuse_wide_radii() -> None:
    same = [0x1234_5678_9ABC_DEF0] * 50  # 50 * 49 / 2 pairs per block
    assert EarlierPairs.of(same, by_distance(3), limit=4 * 1225) is not None
    assert EarlierPairs.of(same, by_distance(3), limit=4 * 1225 - 1) is None
    with pytest.raises(ValueError, match="k <= 3"):
        EarlierPairs.of(same, by_distance(4))


def test_the_batch_index_decides_by_the_fingerprint_test_alone() -> None:
    """Both take the policy's test of a pair without texts, and refuse one that measures."""
    p = VerifyPolicy("all")
    assert p.fingerprint_test(5) == by_distance(5) == (5, False, None)
    assert BatchIndex(p.fingerprint_test(5)).k == 5 and BatchIndex(by_distance(5)).scan
    for test in (p.test(3, short=True), p.test(3, short=False)):  # verified: a threshold
        with pytest.raises(ValueError, match="distance alone"):
            BatchIndex(test)
        with pytest.raises(ValueError, match="distance alone"):
            EarlierPairs.of([1, 2], test)
