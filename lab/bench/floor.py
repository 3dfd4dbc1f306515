"""The plain-COPY floor of adds into a big store, beside ``add_many``, in one run.

The floor is what the disk and the btrees allow: a bare table with the
store's layout (an identity primary key and the four ``(b_i, b_i+1,
fingerprint)`` block indexes), pre-filled to the store's size, receiving the
same fingerprints by binary COPY in batches of the same size, one durable
commit each. ``add_many`` can only be slower: it also looks up, locks and
decides. The three writers take turns batch by batch (:func:`race`), so a
checkpoint's full-page images or a neighbour's load falls on all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg

from simhash_pg.bits import to_signed_array
from simhash_pg.store.pgcopy import binary_copy_data

__all__ = ["FLOOR_TABLE", "copy_floor", "make_floor_table", "race"]

FLOOR_TABLE = "bench_floor"
_BLOCKS = [
    "b0 smallint GENERATED ALWAYS AS ((((fingerprint >> 48) & 65535) - 32768)::smallint) STORED",
    "b1 smallint GENERATED ALWAYS AS ((((fingerprint >> 32) & 65535) - 32768)::smallint) STORED",
    "b2 smallint GENERATED ALWAYS AS ((((fingerprint >> 16) & 65535) - 32768)::smallint) STORED",
    "b3 smallint GENERATED ALWAYS AS (((fingerprint & 65535) - 32768)::smallint) STORED",
]


def make_floor_table(conn: psycopg.Connection[Any], fps: np.ndarray) -> float:
    """(Re)create the floor table holding ``fps``, indexes built after the fill; seconds."""
    t = time.perf_counter()
    conn.execute(f"DROP TABLE IF EXISTS {FLOOR_TABLE}")
    conn.execute(
        f"CREATE TABLE {FLOOR_TABLE} (id bigint GENERATED ALWAYS AS IDENTITY,"
        f" fingerprint bigint NOT NULL, {', '.join(_BLOCKS)})"
    )
    for start in range(0, len(fps), 1_000_000):
        copy_floor(conn, fps[start : start + 1_000_000])
    conn.execute(f"ALTER TABLE {FLOOR_TABLE} ADD PRIMARY KEY (id)")
    for i in range(4):
        conn.execute(
            f"CREATE INDEX ON {FLOOR_TABLE} (b{i}, b{(i + 1) % 4}, fingerprint)"
            " WITH (deduplicate_items = off)"
        )
    conn.execute(f"VACUUM (ANALYZE) {FLOOR_TABLE}")
    # into shared buffers, as bench store prewarms the store's (index builds bypass them)
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        conn.execute(
            "SELECT pg_prewarm(c.oid) FROM pg_class c WHERE c.oid = %s::regclass"
            " OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass)",
            [FLOOR_TABLE, FLOOR_TABLE])
    except psycopg.Error:
        pass  # no pg_prewarm: the first batches read the pages in
    return time.perf_counter() - t


def copy_floor(conn: psycopg.Connection[Any], fps: np.ndarray) -> None:
    """One binary COPY of ``fps`` into the floor table (the caller's transaction, or its own)."""
    data = binary_copy_data((">i8", to_signed_array(fps)))
    with conn.cursor() as cur, cur.copy(
        f"COPY {FLOOR_TABLE} (fingerprint) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.write(data)


def race(writers: dict[str, Callable[[np.ndarray], Any]], data: dict[str, np.ndarray],
         batch: int) -> dict[str, float]:
    """Rows/s of each writer, feeding each its own data a batch at a time, in turns."""
    spent = dict.fromkeys(writers, 0.0)
    rows = dict.fromkeys(writers, 0)
    n = min(len(v) for v in data.values())
    for start in range(0, n, batch):
        for name, write in writers.items():
            chunk = data[name][start : start + batch]
            t = time.perf_counter()
            write(chunk)
            spent[name] += time.perf_counter() - t
            rows[name] += len(chunk)
    return {name: rows[name] / spent[name] for name in writers}
