"""Bit helpers: the one place fingerprints change representation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simhash_pg.bits import (
    BLOCK_SHIFTS,
    BLOCKS,
    DEFAULT_K,
    PIGEONHOLE_K,
    blocks,
    check_fingerprint,
    hamming,
    hamming_array,
    hamming_either,
    to_signed,
    to_signed_array,
    to_unsigned,
    to_unsigned_array,
)

u64 = st.integers(min_value=0, max_value=2**64 - 1)

EDGES = [
    # fp, signed, blocks (b0 = bits 48-63 ... b3 = bits 0-15, each minus 32768)
    (0, 0, (-32768, -32768, -32768, -32768)),
    (2**63 - 1, 2**63 - 1, (-1, 32767, 32767, 32767)),
    (2**63, -(2**63), (0, -32768, -32768, -32768)),
    (2**64 - 1, -1, (32767, 32767, 32767, 32767)),
    (0x0001_0002_0003_0004, 0x0001_0002_0003_0004, (-32767, -32766, -32765, -32764)),
]


@pytest.mark.parametrize(("fp", "signed", "blks"), EDGES)
def test_edges(fp: int, signed: int, blks: tuple[int, int, int, int]) -> None:
    assert to_signed(fp) == signed
    assert to_unsigned(signed) == fp
    assert blocks(fp) == blks
    assert all(-32768 <= b <= 32767 for b in blocks(fp))


@given(u64)
def test_signed_round_trip(fp: int) -> None:
    s = to_signed(fp)
    assert -(2**63) <= s < 2**63
    assert to_unsigned(s) == fp
    assert s % 2**64 == fp


@given(u64)
def test_blocks_rebuild_the_fingerprint(fp: int) -> None:
    b0, b1, b2, b3 = blocks(fp)
    rebuilt = ((b0 + 32768) << 48) | ((b1 + 32768) << 32) | ((b2 + 32768) << 16) | (b3 + 32768)
    assert rebuilt == fp


@given(u64, u64)
def test_hamming_matches_popcount(a: int, b: int) -> None:
    assert hamming(a, b) == bin(a ^ b).count("1")
    assert hamming(a, b) == hamming(b, a)


@given(u64, u64, st.booleans(), st.booleans())
def test_hamming_either_reads_signed_and_unsigned_alike(a: int, b: int, sa: bool,
                                                         sb: bool) -> None:
    assert hamming_either(to_signed(a) if sa else a, to_signed(b) if sb else b) == hamming(a, b)


@given(st.lists(st.tuples(u64, u64), min_size=1, max_size=50))
def test_array_variants(pairs: list[tuple[int, int]]) -> None:
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    assert hamming_array(a, b).tolist() == [hamming(x, y) for x, y in pairs]
    signed = to_signed_array(np.array(a, dtype=np.uint64))
    assert signed.tolist() == [to_signed(x) for x in a]
    assert to_unsigned_array(signed).tolist() == a


@given(u64)
def test_pigeonhole_within_three_bits(fp: int) -> None:
    # docs/design.md: distance <= 3 implies one equal block; flip 3 bits in 3 blocks.
    other = fp ^ (1 << 3) ^ (1 << 20) ^ (1 << 40)
    assert hamming(fp, other) == 3
    assert sum(x == y for x, y in zip(blocks(fp), blocks(other), strict=True)) >= 1


@given(u64, st.lists(st.integers(0, 63), unique=True, max_size=PIGEONHOLE_K))
def test_pigeonhole_k_is_the_widest_radius_that_keeps_a_block(fp: int, bits: list[int]) -> None:
    """PIGEONHOLE_K (what the SQL's ``k <= 3`` repeats): any fingerprint within it
    shares a whole block with the query; one bit more can spoil every block."""
    other = fp
    for b in bits:
        other ^= 1 << b
    assert any(x == y for x, y in zip(blocks(fp), blocks(other), strict=True))
    spoil_all = fp ^ sum(1 << s for s in BLOCK_SHIFTS)  # one bit in each block
    assert hamming(fp, spoil_all) == PIGEONHOLE_K + 1 == BLOCKS
    assert not any(x == y for x, y in zip(blocks(fp), blocks(spoil_all), strict=True))
    assert DEFAULT_K <= PIGEONHOLE_K  # the default query takes the block locks


@pytest.mark.parametrize("bad", [-1, 2**64, 2**70])
def test_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError, match="out of range"):
        to_signed(bad)
    with pytest.raises(ValueError):
        blocks(bad)


@pytest.mark.parametrize("bad", [True, 1.0, "1", None])
def test_not_an_int(bad: object) -> None:
    with pytest.raises(TypeError):
        check_fingerprint(bad)
    with pytest.raises(TypeError):
        to_unsigned(bad)  # type: ignore[arg-type]


def test_signed_out_of_range() -> None:
    with pytest.raises(ValueError):
        to_unsigned(2**63)
    with pytest.raises(ValueError):
        to_unsigned(-(2**63) - 1)


@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=50))
def test_vectorised_conversions_equal_the_scalar_ones(fps: list[int]) -> None:
    from simhash_pg.bits import blocks_array, raw_blocks, to_signed_list

    assert to_signed_list(fps) == [to_signed(fp) for fp in fps]
    assert blocks_array(fps).reshape(-1, 4).tolist() == [list(blocks(fp)) for fp in fps]
    assert [tuple(b - 32768 for b in raw_blocks(fp)) for fp in fps] == [blocks(fp) for fp in fps]


def test_to_signed_list_rejects_out_of_range() -> None:
    from simhash_pg.bits import to_signed_list

    with pytest.raises(OverflowError):
        to_signed_list([2**64])
    with pytest.raises(OverflowError):
        to_signed_list([-1])


@given(u64)
def test_parse_fingerprint_reads_decimal_and_hex(fp: int) -> None:
    from simhash_pg.bits import parse_fingerprint

    assert parse_fingerprint(str(fp)) == parse_fingerprint(hex(fp)) == fp
    assert parse_fingerprint(f"0X{fp:016X}") == fp


@pytest.mark.parametrize("bad, message", [
    ("", "decimal digits or 0x-hex"), ("-1", "decimal digits or 0x-hex"),
    ("1.5", "decimal digits or 0x-hex"), ("0o17", "decimal digits or 0x-hex"),
    ("1_000", "decimal digits or 0x-hex"), (" 12", "decimal digits or 0x-hex"),
    ("0x", "decimal digits or 0x-hex"), ("0x" + "f" * 17, "at most 16 hex digits"),
    (str(2**64), "out of range"), ("99999999999999999999", "out of range"),
])
def test_parse_fingerprint_names_the_problem(bad: str, message: str) -> None:
    from simhash_pg.bits import parse_fingerprint

    with pytest.raises(ValueError, match=message):
        parse_fingerprint(bad)
