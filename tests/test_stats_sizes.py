"""``stats``: the key table's bytes, and the look-up's indexes against shared_buffers."""

from __future__ import annotations

import subprocess
import sys

import psycopg

from simhash_pg import SimhashStore
from simhash_pg.cli.stats import lookup_note

_TEXTS = [f"Item {i}: the council met on Tuesday to discuss the harbour budget, the new "
          f"ferry timetable and a request from the fishermen's union number {i}. "
          "Each sentence here is long enough to be kept as a key of the text." for i in range(20)]


def _tree_size(conn: psycopg.Connection, fn: str, table: str) -> int:
    got = conn.execute(f"SELECT coalesce(sum({fn}(relid)), 0) FROM pg_partition_tree(%s)",
                       [table]).fetchone()
    assert got is not None
    return int(got[0])


def test_stats_count_the_key_table_and_the_lookups_indexes(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add_many(_TEXTS, dedup=False)
        stats = store.stats()
        conn = store.connection
        keys_index = _tree_size(conn, "pg_indexes_size", "simhash_text_keys")
        keys_table = _tree_size(conn, "pg_table_size", "simhash_text_keys")
        shared = conn.execute(
            "SELECT pg_size_bytes(current_setting('shared_buffers'))").fetchone()
    assert keys_index > 0 and keys_table > 0  # the texts' keys are stored
    assert stats["text_keys_bytes"] == keys_table + keys_index
    assert stats["lookup_index_bytes"] == stats["index_bytes"] + keys_index
    assert shared is not None and stats["shared_buffers_bytes"] == shared[0] > 0
    # a small store's indexes fit in any server's buffers: no note
    assert lookup_note(stats) is None


def test_the_note_names_both_sizes_once_the_indexes_outgrow_the_buffers() -> None:
    stats = {"lookup_index_bytes": 15 * 2**30, "shared_buffers_bytes": 9 * 2**30}
    note = lookup_note(stats)
    assert note is not None
    assert "15.0 GiB" in note and "9.0 GiB" in note and "shared_buffers" in note
    assert lookup_note({"lookup_index_bytes": 2**30, "shared_buffers_bytes": 2**30}) is None
    assert lookup_note({}) is None  # a store that reports neither


def test_stats_prints_them_through_the_entry_point(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add_many(_TEXTS[:3], dedup=False)
    proc = subprocess.run([sys.executable, "-m", "simhash_pg.cli", "stats", "--dsn", pg_dsn],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "text_keys_bytes:" in proc.stdout and "lookup_index_bytes:" in proc.stdout
    assert "shared_buffers_bytes:" in proc.stdout and "note:" not in proc.stderr
