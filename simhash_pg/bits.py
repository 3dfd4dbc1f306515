"""Bit-level helpers: the one place where fingerprints change representation.

A fingerprint is an unsigned 64-bit int in Python. PostgreSQL stores it as a
signed ``bigint`` (two's complement), and its four 16-bit blocks as
``smallint`` values shifted by -32768 (docs/design.md, "Where the bits live"):

    b0 = bits 48-63, b1 = bits 32-47, b2 = bits 16-31, b3 = bits 0-15

Every other module converts through these functions, never by hand.

:data:`PIGEONHOLE_K` and :data:`DEFAULT_K` are facts of this layout that the
SQL repeats, since it cannot import them: ``simhash_add``
(sql/current/add.sql: ``p_k DEFAULT 3``; at ``p_k <= 3`` the four block
locks, above it the store-wide lock), ``simhash_near``, ``simhash_near_many``
(sql/current/near.sql) and ``simhash_pairs`` (pairs.sql: the pair form at
``k <= 3``). This module is the Python side's one copy of each; changing
one needs a schema revision that changes the SQL with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

__all__ = [
    "BLOCKS",
    "BLOCK_BITS",
    "BLOCK_OFFSET",
    "BLOCK_SHIFTS",
    "DEFAULT_K",
    "MAX_FINGERPRINT",
    "PIGEONHOLE_K",
    "blocks",
    "blocks_array",
    "check_fingerprint",
    "hamming",
    "hamming_array",
    "hamming_either",
    "parse_fingerprint",
    "to_signed",
    "to_unsigned",
]

MAX_FINGERPRINT = (1 << 64) - 1
BLOCKS = 4
BLOCK_BITS = 16
# Where each block starts: b0 = bits 48-63, b1 = bits 32-47, b2 = 16-31, b3 = 0-15.
BLOCK_SHIFTS = (48, 32, 16, 0)
BLOCK_OFFSET = 1 << 15  # smallint holds block - 32768
# The widest k at which every fingerprint within k of a query shares a whole
# block with it (k differing bits spoil at most k of the BLOCKS blocks): what
# the block locks, the batch's block dicts, the pair form and the always
# probed own block values rely on.
PIGEONHOLE_K = BLOCKS - 1
# The radius of a fingerprint query when none is given.
DEFAULT_K = 3
_SIGN = 1 << 63
_WRAP = 1 << 64


def check_fingerprint(fp: object) -> int:
    """Return ``fp`` if it is an unsigned 64-bit fingerprint, else raise.

    bool is rejected although it is an int: ``True`` is never a fingerprint.
    """
    if isinstance(fp, bool) or not isinstance(fp, (int, np.integer)):
        raise TypeError(f"a fingerprint must be an int, got {type(fp).__name__}")
    value = int(fp)
    if not 0 <= value <= MAX_FINGERPRINT:
        raise ValueError(
            f"fingerprint {value} is out of range: expected an unsigned 64-bit int "
            f"(0 <= fp < 2**64); use to_unsigned() for a signed bigint column value"
        )
    return value


_FP_TEXT = re.compile(r"0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20}")


def parse_fingerprint(text: str) -> int:
    """A fingerprint written as decimal digits or 0x-hex (the CLI's and the API's form).

    Raises ValueError naming the problem: not that form, or out of range.
    """
    if not isinstance(text, str) or not _FP_TEXT.fullmatch(text):
        raise ValueError(f"a fingerprint is decimal digits or 0x-hex (at most 16 hex "
                         f"digits), got {text!r}")
    return check_fingerprint(int(text, 0) if text[1:2] in ("x", "X") else int(text, 10))


def to_signed(fp: int) -> int:
    """Unsigned 64-bit fingerprint -> the signed ``bigint`` stored in PostgreSQL."""
    value = check_fingerprint(fp)
    return value - _WRAP if value & _SIGN else value


def to_unsigned(value: int) -> int:
    """Signed ``bigint`` column value -> unsigned 64-bit fingerprint."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"a bigint value must be an int, got {type(value).__name__}")
    v = int(value)
    if not -_SIGN <= v < _SIGN:
        raise ValueError(f"bigint value {v} is out of range (-2**63 <= v < 2**63)")
    return v + _WRAP if v < 0 else v


def blocks(fp: int) -> tuple[int, int, int, int]:
    """The four ``smallint`` block values (b0, b1, b2, b3) of a fingerprint.

    Equal to the generated columns b0..b3 that PostgreSQL derives.
    """
    b0, b1, b2, b3 = raw_blocks(check_fingerprint(fp))
    return b0 - BLOCK_OFFSET, b1 - BLOCK_OFFSET, b2 - BLOCK_OFFSET, b3 - BLOCK_OFFSET


def raw_blocks(fp: int) -> tuple[int, int, int, int]:
    """The four unsigned 16-bit blocks (block b_i + 32768), unchecked.

    For hot loops over fingerprints that were range-checked already.
    """
    return fp >> 48, (fp >> 32) & 0xFFFF, (fp >> 16) & 0xFFFF, fp & 0xFFFF


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two unsigned 64-bit fingerprints."""
    return (check_fingerprint(a) ^ check_fingerprint(b)).bit_count()


def hamming_either(a: int, b: int) -> int:
    """:func:`hamming` of two fingerprints each unsigned or signed (a ``bigint``
    column value, as read from the database), unchecked: their low 64 bits."""
    return ((a ^ b) & MAX_FINGERPRINT).bit_count()


def to_signed_array(fps: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Vectorised :func:`to_signed` for a uint64 array (a view, no copy)."""
    arr = np.asarray(fps, dtype=np.uint64)
    return arr.view(np.int64)


def to_signed_list(fps: Iterable[int]) -> list[int]:
    """:func:`to_signed` for many fingerprints at once (NumPy enforces the range)."""
    out: list[int] = np.fromiter(fps, dtype=np.uint64).view(np.int64).tolist()
    return out


def blocks_array(fps: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """:func:`blocks` for many fingerprints: an (n, 4) array of the smallint values."""
    arr = np.asarray(fps, dtype=np.uint64)
    shifts = np.array(BLOCK_SHIFTS, dtype=np.uint64)
    raw = (arr[:, None] >> shifts) & np.uint64(0xFFFF)
    out: npt.NDArray[np.int64] = raw.astype(np.int64) - BLOCK_OFFSET
    return out


def to_unsigned_array(values: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """Vectorised :func:`to_unsigned` for an int64 array (a view, no copy)."""
    arr = np.asarray(values, dtype=np.int64)
    return arr.view(np.uint64)


def hamming_array(a: npt.ArrayLike, b: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Vectorised :func:`hamming` for equal-shaped uint64 arrays (or lists of ints)."""
    x = np.bitwise_xor(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    flat = np.ascontiguousarray(x.ravel(), dtype="<u8")
    counts = np.unpackbits(flat.view(np.uint8)).reshape(-1, 64).sum(axis=1, dtype=np.int64)
    out: npt.NDArray[np.int64] = counts.reshape(x.shape)
    return out
