"""Margin-ranked probes: the enumeration against brute force, the vote with margins."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_pg.bits import blocks
from simhash_pg.text.features import extract_hashed
from simhash_pg.text.probes import (
    bit_costs,
    block_bits,
    block_probes,
    cheapest_flips,
    iter_flips,
    probes_meet,
)
from simhash_pg.text.simhash import Fingerprinter, vote, vote_with_margins

ALL = 1 << 16
_BITS = ((np.arange(ALL)[:, None] >> np.arange(16)) & 1).astype(np.int64)  # mask -> its bits


def brute_force(costs: list[int]) -> list[int]:
    """All 65,536 masks sorted by the module's rule: (cost, bits flipped, rank-space mask)."""
    c = np.array(costs, dtype=np.int64)  # callers keep sums below 2**63
    rank = np.empty(16, dtype=np.int64)
    rank[sorted(range(16), key=lambda j: (costs[j], j))] = np.arange(16)
    total = _BITS @ c
    size = _BITS.sum(axis=1)
    rmask = _BITS @ (np.int64(1) << rank)
    return np.lexsort((rmask, size, total)).tolist()


def fp_and_margins(draw_margins: list[int]) -> tuple[int, np.ndarray]:
    m = np.array(draw_margins, dtype=np.int64)
    fp = sum(1 << j for j in range(64) if m[j] > 0)
    return fp, m


# margins from a narrow range make many ties; a wide one, distinct costs
narrow = st.integers(-4, 4)
wide = st.integers(-(1 << 20), 1 << 20)
block_margins = st.one_of(st.lists(narrow, min_size=16, max_size=16),
                          st.lists(wide, min_size=16, max_size=16))


# ------------------------------------------------------------ enumeration


@settings(max_examples=60, deadline=None)
@given(block_margins, st.integers(0, 300), st.sampled_from(["squared", "absolute"]))
def test_cheapest_flips_equal_brute_force(margins: list[int], t: int, cost: str) -> None:
    costs = bit_costs(margins, cost)  # type: ignore[arg-type]
    assert cheapest_flips(costs, t) == brute_force(costs)[:t]


@settings(max_examples=3, deadline=None)
@given(block_margins)
def test_the_whole_order_equals_brute_force(margins: list[int]) -> None:
    costs = bit_costs(margins)
    listed = list(iter_flips(costs))
    assert [m for _, m in listed] == brute_force(costs)
    assert [c for c, _ in listed] == [sum(costs[j] for j in range(16) if m >> j & 1)
                                      for _, m in listed]


@settings(max_examples=30, deadline=None)
@given(st.lists(wide, min_size=16, max_size=16), st.integers(1, 64))
def test_order_is_exact_for_huge_margins(margins: list[int], t: int) -> None:
    # Margins near 2**52 square to ~2**104: exact ints keep the order of the
    # small ones (no float rounding, no int64 overflow).
    big = [m << 32 for m in margins]
    assert cheapest_flips(bit_costs(big), t) == cheapest_flips(bit_costs(margins), t)


def test_zero_costs_tie_by_fewer_bits_then_rank() -> None:
    costs = [0, 0, 5] + [100] * 13
    assert cheapest_flips(costs, 5) == [0b0, 0b1, 0b10, 0b11, 0b100]


def test_bad_budgets_and_costs_are_refused() -> None:
    with pytest.raises(ValueError, match="budget"):
        cheapest_flips([1] * 16, -1)
    with pytest.raises(ValueError, match=">= 0"):
        cheapest_flips([1, -1], 2)
    with pytest.raises(ValueError, match="cost must be"):
        bit_costs([1], "cubed")  # type: ignore[arg-type]


# ------------------------------------------------------------ block probes


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(narrow, wide), min_size=64, max_size=64), st.integers(1, 40),
       st.sampled_from(["squared", "absolute"]))
def test_block_probes_are_real_flip_sets(margins: list[int], t: int, cost: str) -> None:
    fp, m = fp_and_margins(margins)
    per_bit = bit_costs(m, cost)  # type: ignore[arg-type]
    probes = block_probes(fp, m, t, cost)  # type: ignore[arg-type]
    own = blocks(fp)
    for i, values in enumerate(probes):
        assert len(values) == t == len(set(values))
        assert values[0] == own[i]
        spent = []
        for v in values:
            flipped = [b for b in block_bits(i) if (v + 32768) >> (b % 16) & 1
                       != (own[i] + 32768) >> (b % 16) & 1]
            # the value is the query's block with exactly these fingerprint bits flipped
            twin = fp
            for b in flipped:
                twin ^= 1 << b
            assert blocks(twin)[i] == v
            assert [blocks(twin)[k] for k in range(4) if k != i] == [
                own[k] for k in range(4) if k != i]
            spent.append(sum(per_bit[b] for b in flipped))
        assert spent == sorted(spent)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(narrow, wide), min_size=64, max_size=64), st.integers(1, 40),
       st.sampled_from(["squared", "absolute"]), st.booleans())
def test_block_probes_equal_brute_force(margins: list[int], t: int, cost: str,
                                        as_array: bool) -> None:
    """Each block's values are its t first masks in the brute-force order (ties
    included), whether the margins come as a NumPy array (the vote's) or a list."""
    fp, m = fp_and_margins(margins)
    per_bit = bit_costs(m, cost)  # type: ignore[arg-type]
    got = block_probes(fp, m if as_array else margins, t, cost)  # type: ignore[arg-type]
    own = blocks(fp)
    for i, values in enumerate(got):
        lo = block_bits(i).start
        masks = brute_force(per_bit[lo : lo + 16])[:t]
        assert values == [((own[i] + 32768) ^ mk) - 32768 for mk in masks]


def test_block_convention_follows_bits() -> None:
    # Only fingerprint bit 50 (in b0, bits 48-63) is unstable: b0's second
    # probe flips it, and the other blocks' second probes flip their own bits.
    m = np.full(64, -1000, dtype=np.int64)
    m[50] = 1
    m[[33, 17, 3]] = -2  # the cheapest bit of b1, b2 and b3
    fp = 1 << 50
    b0, b1, b2, b3 = block_probes(fp, m, 2)
    assert b0 == [blocks(fp)[0], blocks(0)[0]]
    assert b1[1] == blocks(fp ^ 1 << 33)[1]
    assert b2[1] == blocks(fp ^ 1 << 17)[2]
    assert b3[1] == blocks(fp ^ 1 << 3)[3]


def test_per_block_budgets() -> None:
    m = np.arange(1, 65, dtype=np.int64)
    fp = (1 << 64) - 1
    assert [len(v) for v in block_probes(fp, m, [1, 2, 3, 0])] == [1, 2, 3, 0]
    with pytest.raises(ValueError, match="one budget or 4"):
        block_probes(fp, m, [1, 2])


def test_margins_of_another_fingerprint_are_refused() -> None:
    m = np.arange(1, 65, dtype=np.int64)
    with pytest.raises(ValueError, match="do not belong"):
        block_probes(0, m, 3)
    with pytest.raises(ValueError, match="64 margins"):
        block_probes(0, m[:10], 3)
    with pytest.raises(ValueError, match="out of range"):
        block_probes(1 << 64, m, 3)


# ------------------------------------------------------------ vote with margins


def naive_margins(hashes: list[int], weights: list[float]) -> list[int]:
    w = [round(x * 65536) for x in weights]
    return [sum(wi if h >> j & 1 else -wi for h, wi in zip(hashes, w, strict=True))
            for j in range(64)]


features = st.lists(
    st.tuples(st.integers(0, (1 << 64) - 1),
              st.one_of(st.just(1.0), st.floats(0, 1000, allow_nan=False))),
    min_size=1, max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(features)
def test_vote_with_margins_agrees_with_vote(feats: list[tuple[int, float]]) -> None:
    hashes = [h for h, _ in feats]
    weights = [w for _, w in feats]
    fp, m = vote_with_margins(hashes, weights)
    assert fp == vote(hashes, weights)
    assert m.tolist() == naive_margins(hashes, weights)


@pytest.mark.parametrize("n", [2048, 2049, 9000])
def test_vote_with_margins_large_path(n: int) -> None:
    rng = np.random.default_rng(n)
    hashes = rng.integers(0, 1 << 64, n, dtype=np.uint64)
    weights = rng.integers(1, 5, n).astype(np.float64)
    weights[::3] = 1.0
    fp, m = vote_with_margins(hashes, weights)
    assert fp == vote(hashes, weights)
    assert m.tolist() == naive_margins([int(h) for h in hashes], weights.tolist())


@pytest.mark.parametrize("scheme", ["auto", "zh-tfidf", "words", "chars:n=3,weight=tf"])
def test_vote_with_margins_on_texts(scheme: str) -> None:
    fper = Fingerprinter(scheme)
    for text in ("市图书馆从下个月起延长开放时间，工作日开放到晚上九点。" * 3,
                 "The community pool will be closed for maintenance from Monday to Wednesday.",
                 "short"):
        hashes, weights = extract_hashed(fper.normalize(text), fper.scheme)
        fp, m = vote_with_margins(hashes, weights)
        assert fp == fper.fingerprint(text)
        assert len(m) == 64 and m.dtype == np.int64


def test_vote_with_margins_refuses_what_vote_refuses() -> None:
    with pytest.raises(ValueError, match="no features"):
        vote_with_margins([], [])
    with pytest.raises(ValueError, match="equal length"):
        vote_with_margins([1, 2], [1.0])
    with pytest.raises(ValueError, match=">= 0"):
        vote_with_margins([1], [-1.0])


# -- margins and probes through the Fingerprinter (single and bulk paths) ------

_TEXTS = [
    "The central bank raised interest rates by a quarter point on Tuesday, citing inflation.",
    "央行周二宣布加息25个基点，理由是通胀压力持续上升，市场反应平淡。",
    "Stocks rally as oil falls",
    "Der Bundestag hat am Donnerstag ein neues Gesetz zur Förderung der Windkraft beschlossen.",
]


@pytest.mark.parametrize("scheme", ["auto", "words", "chars:n=3,weight=tf"])
def test_fingerprinter_margins_equal_vote_with_margins(scheme: str) -> None:
    f = Fingerprinter(scheme)
    for text in _TEXTS:
        fp, margins = f.fingerprint_with_margins(text)
        want_fp, want_m = vote_with_margins(*extract_hashed(f.normalize(text), f.scheme))
        assert fp == want_fp == f.fingerprint(text)
        assert margins.tolist() == want_m.tolist()
        fp2, probes = f.fingerprint_probes(text, 11)
        assert fp2 == fp
        assert probes == block_probes(fp, want_m, 11)
        assert tuple(p[0] for p in probes) == tuple(blocks(fp))  # own block value first


def _length(norm: str) -> int:  # module-level: workers may be spawned
    return len(norm)


@pytest.mark.parametrize("workers", [1, 2])
def test_bulk_probes_equal_single(workers: int) -> None:
    f = Fingerprinter()
    # repeat so the batch is big enough to be worth the pool when workers = 2
    texts: list[object] = [t + f" {i}" for i in range(40) for t in _TEXTS]
    texts += ["", None, "   ..."]  # no fingerprint: all three None
    got = f.fingerprint_many_probes(texts, _length, 7, workers=workers)
    assert len(got) == len(texts)
    for text, (fp, n, probes) in zip(texts, got, strict=True):
        if not isinstance(text, str) or not text.strip(" ."):
            assert (fp, n, probes) == (None, None, None)
            continue
        assert (fp, probes) == f.fingerprint_probes(text, 7)
        assert n == len(f.normalize(text))
    also = f.fingerprint_many_also(texts, _length, workers=workers)
    assert also == [(fp, n) for fp, n, _ in got]


def test_bulk_probes_refuse_bad_budgets() -> None:
    f = Fingerprinter()
    for t in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="probe budget"):
            f.fingerprint_many_probes(["a text"], _length, t)  # type: ignore[arg-type]


def test_probes_meet_is_a_block_value_among_the_probes() -> None:
    fp = 0x1234_5678_9ABC_DEF0
    own = blocks(fp)
    # the query's own blocks meet it everywhere; another value in one block meets it there
    assert probes_meet([[v] for v in own], fp) == [0, 1, 2, 3]
    other = fp ^ (1 << 50) ^ (1 << 3)  # b0 and b3 changed
    assert probes_meet([[v] for v in own], other) == [1, 2]
    assert probes_meet([[own[0]], [], [7, own[2]], []], fp) == [0, 2]
    # through block_probes: a row one probed flip away meets at that block
    m = np.where(np.array([(fp >> j) & 1 for j in range(64)]) == 1, 5, -5)  # bit j's margin
    m[49] = 1 if (fp >> 49) & 1 else -1  # b0's least stable bit
    probes = block_probes(fp, m, 2)
    assert probes[0][1] == blocks(fp ^ (1 << 49))[0]
    assert probes_meet(probes, fp ^ (1 << 49)) == [0, 1, 2, 3]
    assert probes_meet(probes, fp ^ (1 << 49) ^ (1 << 60)) == [1, 2, 3]  # 60: not probed
    with pytest.raises(ValueError, match="4 blocks"):
        probes_meet([[1], [2]], fp)
