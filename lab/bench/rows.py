"""Synthetic text rows for ``bench scale``: shaped like those a user's store holds.

A bare fingerprint (``bulk_load`` of a uint64 array) is a row no user's store
holds: a text row also keeps its verification text, a sentence signature and
its keys (``sentence_hashes``: the hashes of its longest sentences, its
min-hash keys, a title's keys), and the key look-ups' costs grow with them.
Here each row copies what the product stores for a synthetic text of the
kind (:func:`profile` runs the product on a sample of such texts): the
verification text itself, whether it has a signature, and how many keys;
the signature's and keys' *values* are random, as distinct articles' are.

Besides, like real stores:

- near-duplicate families: 10% of rows are reprints of another row of their
  chunk (its text and keys, its fingerprint with 1-3 bits flipped);
- boilerplate: a share of rows hold one of :data:`SHARED_KEYS` keys in place
  of one of their own (a site's footer sentence, an agency's byline), with
  Zipf popularity, so that each is held by far more rows than the holder cap
  (SHARED_SENTENCE_CAP) lets the store look up.

The rows are made by NumPy a chunk at a time and written by binary COPY
into the root table, so that its row triggers fire (:func:`copy_rows`), in
one segment or in several that grow the store (:class:`Segment`).
"""

from __future__ import annotations

import contextlib
import random
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from lab.bench.text import _VOCAB, _sentences
from simhash_pg.store.pgcopy import _HEADER, _TRAILER

__all__ = ["COLUMNS", "FAMILY_SHARE", "KINDS", "SHARED_KEYS", "Days", "Profile", "Segment",
           "copy_rows", "last_id", "product_fields", "profile", "shared_keys", "synthetic_texts",
           "two_days"]

KINDS = ("news", "titles")
COLUMNS = ("id", "created_at", "fingerprint", "verify_text", "sentence_sig", "sentence_hashes")
SHARED_KEYS = 50
FAMILY_SHARE = 0.1
ROWS_PER_COPY = 1_000_000  # a COPY statement (and a commit) each
_PIECE = 100_000  # rows made at once: memory stays flat whatever --n
_PG_EPOCH_US = 946_684_800 * 1_000_000  # 2000-01-01, where timestamptz counts from
_INT8_OID = 20
_NULL = b"\xff\xff\xff\xff"  # a field of length -1
_HEAD = np.dtype([("n", ">i2"), ("l0", ">i4"), ("id", ">i8"), ("l1", ">i4"), ("at", ">i8"),
                  ("l2", ">i4"), ("fp", ">i8")])
_INT8 = np.dtype([("l", ">i4"), ("v", ">i8")])  # a bigint field, or an array element


@dataclass(frozen=True)
class Profile:
    """What the product stores for ``samples`` synthetic texts of a kind."""

    kind: str
    texts: list[bytes]  # verification texts as binary COPY fields (length, UTF-8)
    counts: np.ndarray  # keys (sentence_hashes' length) per text
    signed: np.ndarray  # whether the text has a sentence signature
    chars: float  # mean verification text length

    @property
    def width(self) -> int:
        return max(1, int(self.counts.max()))


@dataclass(frozen=True)
class Days:
    """Yesterday's rows are spread over [y0, t0), today's over [t0, now); UTC µs."""

    y0: int
    t0: int
    now: int


@dataclass(frozen=True)
class Segment:
    """Rows ``lo``..``hi`` - 1 of a fill that grows the store to ``total`` rows (their
    numbers seed them), with ids ``after`` + 1...: the share ``yesterday`` of them
    yesterday's (half, unless a day is filled on its own), the rest today's, spread over
    the share ``lo / total``..``hi / total`` of each day, so that within a partition the
    rows' times grow with their ids, as in a store that grew so. ``stream`` > 0 draws
    other rows for the same numbers (bench day's today beside its yesterday), the
    boilerplate keys staying the same. ``Segment(0, n, n)`` is a fill in one go."""

    lo: int
    hi: int
    total: int
    after: int = 0
    yesterday: float = 0.5
    stream: int = 0

    def times(self, g: np.ndarray, days: Days) -> np.ndarray:
        """created_at (UTC µs) of rows ``g``: yesterday's first, then today's."""
        m, local = self.hi - self.lo, g - self.lo
        half = int(m * self.yesterday)  # 0.5: m // 2
        # each row's place in its day, 0..1: the segment's share of it, evenly
        y = (self.lo + (local + 0.5) * m / max(half, 1)) / self.total
        t = (self.lo + (local - half + 0.5) * m / max(m - half, 1)) / self.total
        return np.where(local < half, days.y0 + y * (days.t0 - days.y0),
                        days.t0 + t * (days.now - days.t0))


def two_days(conn: psycopg.Connection[Any]) -> Days:
    """Yesterday's and today's partitions (UTC days, as the store makes them) made, and
    their span: where a fill's rows go."""
    from datetime import datetime, timedelta, timezone

    now = conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
    midnight = datetime.combine(now.astimezone(timezone.utc).date(), datetime.min.time(),
                                timezone.utc)
    for day in (midnight - timedelta(days=1), midnight):
        conn.execute("SELECT simhash_create_partition(%s)", [day.date()])
    return Days(*(int(x.timestamp() * 1_000_000)
                  for x in (midnight - timedelta(days=1), midnight, now)))


def synthetic_texts(kind: str, count: int, text_chars: int, seed: int) -> list[str]:
    """News: sentences of 12 vocabulary words, ~``text_chars`` letters (±25%); titles:
    7-11 words."""
    rnd = random.Random(seed)
    if kind == "titles":
        return [" ".join(rnd.choices(_VOCAB, k=rnd.randint(7, 11))).capitalize()
                for _ in range(count)]
    per_word = sum(map(len, _VOCAB)) / len(_VOCAB)  # the verification text keeps letters
    return [_sentences(rnd.choices(_VOCAB, k=max(
        2, round(text_chars * rnd.uniform(0.75, 1.25) / per_word)))) for _ in range(count)]


def product_fields(texts: list[str]) -> list[tuple[str | None, int | None, list[int] | None]]:
    """(verify_text, sentence_sig, sentence_hashes) that a store with ``verify="all"`` keeps
    of each text that has a fingerprint: the product's own code path (add_many's)."""
    from simhash_pg.text.simhash import Fingerprinter
    from simhash_pg.verify.candidates import texts_and_vtexts
    from simhash_pg.verify.rule import policy_for

    policy = policy_for("all")
    got = texts_and_vtexts(Fingerprinter(), texts, policy, 1, probes=False)
    return [policy.stored_fields(vt) for _, vt in got if vt is not None]


def profile(kind: str, text_chars: int, seed: int, samples: int = 2048) -> Profile:
    """The rows' templates: the product's fields of ``samples`` synthetic texts."""
    fields = product_fields(synthetic_texts(kind, samples, text_chars, seed))
    vtexts = [(v or "").encode("utf-8") for v, _, _ in fields]
    return Profile(kind, [struct.pack(">i", len(v)) + v for v in vtexts],
                   np.array([len(h or ()) for _, _, h in fields], dtype=np.int64),
                   np.array([s is not None for _, s, _ in fields]),
                   float(np.mean([len(v) for v in vtexts])))


def shared_keys(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The boilerplate keys and their popularity (Zipf, s = 1: the first is held by
    22% of the rows that hold one, the last by 0.4%)."""
    keys = np.random.default_rng([seed, 50]).integers(
        -(2**63), 2**63 - 1, size=SHARED_KEYS, dtype=np.int64, endpoint=True)
    weights = 1 / np.arange(1, SHARED_KEYS + 1)
    return keys, weights / weights.sum()


def _piece(p: Profile, start: int, stop: int, seg: Segment, days: Days, boilerplate: float,
           seed: int) -> bytes:
    """Binary COPY rows (no header) of rows ``start``..``stop`` - 1 of segment ``seg``."""
    m = stop - start
    rng = np.random.default_rng([seed, start] + ([seg.stream] if seg.stream else []))
    at = seg.times(np.arange(start, stop, dtype=np.float64), days)
    fps = rng.integers(-(2**63), 2**63 - 1, size=m, dtype=np.int64, endpoint=True)
    pick = rng.integers(0, len(p.texts), size=m)
    sigs = rng.integers(-(2**63), 2**63 - 1, size=m, dtype=np.int64, endpoint=True)
    width = p.width
    keys = rng.integers(-(2**63), 2**63 - 1, size=(m, width), dtype=np.int64, endpoint=True)
    # families: a reprint keeps its source's text and keys; 1-3 bits of its fingerprint move
    copies = np.flatnonzero(rng.random(m) < FAMILY_SHARE)
    sources = rng.integers(0, m, size=len(copies))
    for arr in (pick, sigs, keys):
        arr[copies] = arr[sources]
    flips = np.zeros(len(copies), dtype=np.uint64)
    nbits = rng.integers(1, 4, size=len(copies))
    for j in range(3):
        bit = rng.integers(0, 64, size=len(copies)).astype(np.uint64)
        flips |= np.where(nbits > j, np.uint64(1) << bit, np.uint64(0))
    fps[copies] = (fps[sources].view(np.uint64) ^ flips).view(np.int64)
    counts = p.counts[pick]
    # boilerplate: a shared key in place of one of the row's own
    pool, weights = shared_keys(seed)
    held = np.flatnonzero((rng.random(m) < boilerplate) & (counts > 0))
    keys[held, rng.integers(0, counts[held])] = pool[rng.choice(SHARED_KEYS, len(held), p=weights)]
    # the row's keys sorted in its first counts slots (the rest sort after them)
    keys[np.arange(width) >= counts[:, None]] = np.iinfo(np.int64).max
    keys.sort(axis=1)

    head = np.empty(m, dtype=_HEAD)
    head["n"] = len(COLUMNS)
    head["l0"] = head["l1"] = head["l2"] = 8
    head["id"] = np.arange(start + 1, stop + 1) + (seg.after - seg.lo)
    head["at"] = at.astype(np.int64) - _PG_EPOCH_US
    head["fp"] = fps
    sig = np.empty(m, dtype=_INT8)
    sig["l"], sig["v"] = 8, sigs
    elems = np.empty((m, width), dtype=_INT8)
    elems["l"], elems["v"] = 8, keys
    hb, sb, kb = head.tobytes(), sig.tobytes(), elems.tobytes()
    # an int8[] field: length, dimensions, no NULLs, element type, size, lower bound 1
    arrays = [_NULL] + [struct.pack(">iiiiii", 20 + 12 * c, 1, 0, _INT8_OID, c, 1)
                        for c in range(1, width + 1)]
    # one join of slices: the fixed-width parts are NumPy's, the texts the profile's
    hw, kw, texts = _HEAD.itemsize, 12 * width, p.texts
    parts: list[bytes] = []
    signed = p.signed[pick].tolist()
    for i, (j, c) in enumerate(zip(pick.tolist(), counts.tolist(), strict=True)):
        parts += (hb[i * hw : i * hw + hw], texts[j],
                  sb[i * 12 : i * 12 + 12] if signed[i] else _NULL,
                  arrays[c], kb[i * kw : i * kw + 12 * c])
    return b"".join(parts)


def last_id(conn: psycopg.Connection[Any]) -> int:
    """The last id simhash_documents' sequence gave (0 if none): a segment's come after."""
    got = conn.execute("SELECT pg_sequence_last_value(pg_get_serial_sequence("
                       "'simhash_documents', 'id')::regclass)").fetchone()
    return int(got[0] or 0) if got else 0


# The key table's rows of simhash_documents rows by id, as its insert trigger
# makes them (SQL simhash_text_keys_fill, revision 0018);
# tests/test_bench_scale.py checks the result against the table's definition.
_KEYS_OF_IDS = "SELECT simhash_text_keys_fill(%s, %s)"
# The indexes a bulk fill drops and builds again: the key table's and the
# documents' secondary ones (not their primary key: ids arrive in order).
_SECONDARY_INDEXES = (
    "SELECT i.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x"
    " JOIN pg_class i ON i.oid = x.indexrelid"
    " WHERE x.indrelid IN ('simhash_text_keys'::regclass, 'simhash_documents'::regclass)"
    " AND NOT x.indisprimary"
)


def copy_rows(conn: psycopg.Connection[Any], p: Profile, seg: Segment, days: Days,
              boilerplate: float, seed: int,
              progress: Callable[[int, float], None] | None = None,
              keys_in_bulk: bool = False) -> None:
    """COPY segment ``seg`` of rows of profile ``p`` into simhash_documents, a commit per
    :data:`ROWS_PER_COPY`, ``progress(rows, seconds)`` after each (the segment's rows so
    far); then the id sequence past them, so that the next writer's ids come after.

    ``keys_in_bulk``: as :func:`keys_in_bulk_after` (50M rows within the hour), for a
    store whose fill is not what is measured.
    """
    with keys_in_bulk_after(conn) if keys_in_bulk else contextlib.nullcontext():
        _copy_segment(conn, p, seg, days, boilerplate, seed, progress)


@contextlib.contextmanager
def keys_in_bulk_after(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """Rows added to simhash_documents inside the block get their keys afterwards, by one
    INSERT (as the upgrade to revision 0017 fills the key table), with the key table's
    insert trigger off and the secondary indexes (the documents' and the key table's)
    dropped meanwhile and built again at the end (as bulk_load does): the same store, many
    times faster. The new rows are those with ids past the id sequence's value on entry,
    up to its value on exit: whoever inserts must move the sequence past them.
    """
    first = last_id(conn) + 1
    indexes = [(r[0], r[1]) for r in conn.execute(_SECONDARY_INDEXES)]
    conn.execute("ALTER TABLE simhash_documents DISABLE TRIGGER simhash_text_keys_insert")
    for name, _ in indexes:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    try:
        yield
    finally:
        conn.execute("ALTER TABLE simhash_documents ENABLE TRIGGER simhash_text_keys_insert")
    conn.execute(_KEYS_OF_IDS, [first, last_id(conn)])
    for _, definition in indexes:
        # a partitioned index's definition reads "ON ONLY": that would build
        # the parent's alone, invalid, and no partition's
        conn.execute(definition.replace(" ON ONLY ", " ON ", 1))


def _copy_segment(conn: psycopg.Connection[Any], p: Profile, seg: Segment, days: Days,
                  boilerplate: float, seed: int,
                  progress: Callable[[int, float], None] | None) -> None:
    statement = sql.SQL("COPY simhash_documents ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.SQL(", ").join(map(sql.Identifier, COLUMNS)))
    t = time.perf_counter()
    for lo in range(seg.lo, seg.hi, ROWS_PER_COPY):
        hi = min(seg.hi, lo + ROWS_PER_COPY)
        with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
            copy.write(_HEADER)
            for start in range(lo, hi, _PIECE):
                copy.write(_piece(p, start, min(hi, start + _PIECE), seg, days, boilerplate,
                                  seed))
            copy.write(_TRAILER)
        if progress is not None:
            progress(hi - seg.lo, time.perf_counter() - t)
    conn.execute("SELECT setval(pg_get_serial_sequence('simhash_documents', 'id'), %s)",
                 [seg.after + seg.hi - seg.lo])
