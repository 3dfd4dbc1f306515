"""Reading a store into PostgreSQL's cache: SimhashStore.warm, simhash-pg warm, and the
embedded server's autoprewarm (simhash_pg/store/warm.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from _throwaway import needs_own_server

from simhash_pg import SimhashStore
from simhash_pg.db.server import LocalServer, sized_settings, temporary_home
from simhash_pg.store.warm import WarmError, warm_plan

TEXTS = [f"report {i}: the river rose by {i} centimetres overnight near the old mill, "
         f"and the council met at {i % 12 + 1} o'clock to decide on sandbags" for i in range(40)]


def _exe() -> str:
    return shutil.which("simhash-pg", path=str(Path(sys.executable).parent)) or "simhash-pg"


def _leaves(conn: psycopg.Connection, table: str, *, indexes: bool) -> set[str]:
    """Every leaf of table's partition tree, or of its indexes', by regclass name."""
    if not indexes:
        return {r for (r,) in conn.execute(
            "SELECT p.relid::regclass::text FROM pg_partition_tree(%s::regclass) p"
            " WHERE p.isleaf", [table])}
    return {r for (r,) in conn.execute(
        "SELECT i.indexrelid::regclass::text FROM pg_index i"
        " JOIN pg_partition_tree(%s::regclass) p ON i.indrelid = p.relid WHERE p.isleaf",
        [table])}


def test_the_plan_reads_every_relation_and_the_block_indexes_last(pg_dsn: str) -> None:
    """Every leaf of the documents, the key table and the caller keys, tables and
    indexes, once; priorities fall toward the end, and the block indexes come last,
    so that they are the last pages read."""
    with SimhashStore(pg_dsn) as store:
        store.add_many(TEXTS, dedup=False)
        plan = warm_plan(store.connection)
        names = [r.name for r in plan]
        assert len(names) == len(set(names))
        want: set[str] = set()
        for table in ("simhash_documents", "simhash_text_keys"):
            for indexes in (False, True):
                got = _leaves(store.connection, table, indexes=indexes)
                assert got, (table, indexes)
                want |= got
        # the caller keys' table is not partitioned
        want |= {"simhash_keys", *(r for (r,) in store.connection.execute(
            "SELECT indexrelid::regclass::text FROM pg_index"
            " WHERE indrelid = 'simhash_keys'::regclass"))}
        assert set(names) == want
        assert all(r.read for r in plan)  # a small store fits in shared_buffers
        priorities = [r.priority for r in plan]
        assert priorities == sorted(priorities, reverse=True), plan
        blocks = [r.name for r in plan if r.priority == 1]
        n_parts = len(_leaves(store.connection, "simhash_documents", indexes=False))
        assert len(blocks) == 4 * n_parts
        assert all(re.search(r"_b[0-3]_b[0-3]_fingerprint_idx$", b) for b in blocks)
        assert names[-len(blocks):] == blocks
        key_index = [r for r in plan if r.priority == 2]
        assert {r.name for r in key_index} == _leaves(store.connection, "simhash_text_keys",
                                                      indexes=True)


def test_a_budget_reads_the_block_indexes_first(pg_dsn: str) -> None:
    """What does not fit is left unread, by priority: with room for the block indexes
    alone, only they (and relations with no pages) are read."""
    with SimhashStore(pg_dsn) as store:
        store.add_many(TEXTS, dedup=False)
        full = warm_plan(store.connection)
        block_bytes = sum(r.bytes for r in full if r.priority == 1)
        plan = warm_plan(store.connection, budget=block_bytes)
        assert all(r.read for r in plan if r.priority == 1)
        assert [r for r in plan if r.read and r.priority > 1 and r.bytes > 0] == []
        assert [r for r in plan if not r.read], plan  # the rest was left
        everything = warm_plan(store.connection, budget=0, everything=True)
        assert all(r.read for r in everything)


def test_warm_puts_the_pages_in_shared_buffers(pg_dsn: str, pg: psycopg.Connection) -> None:
    """Evict the store's pages (pg_buffercache, PostgreSQL 18), then warm: each relation
    read has all its pages in shared buffers again."""
    pg.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
    if pg.execute("SELECT to_regproc('pg_buffercache_evict_relation')").fetchone() == (None,):
        pytest.skip("pg_buffercache_evict_relation: PostgreSQL 18 or later")

    def cached(rel: str) -> int:
        row = pg.execute(
            "SELECT count(*) FROM pg_buffercache b JOIN pg_class c"
            " ON b.relfilenode = pg_relation_filenode(c.oid)"
            " AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " WHERE c.oid = %s::regclass AND b.relforknumber = 0", [rel]).fetchone()
        assert row is not None
        return int(row[0])

    with SimhashStore(pg_dsn) as store:
        store.add_many(TEXTS, dedup=False)
        plan = [r for r in warm_plan(store.connection) if r.bytes > 0]
        for r in plan:
            pg.execute("SELECT pg_buffercache_evict_relation(%s::regclass)", [r.name])
        assert sum(cached(r.name) for r in plan) == 0
        done = store.warm()
        assert done.bytes_read == sum(r.bytes for r in plan)
        for r in plan:
            assert cached(r.name) == r.bytes // 8192, r


def test_the_command_prints_what_it_read(pg_dsn: str) -> None:
    with SimhashStore(pg_dsn) as store:
        store.add_many(TEXTS, dedup=False)
    out = subprocess.run([_exe(), "warm", "--dsn", pg_dsn], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out
    assert re.match(r"read (\d+) of \1 relations, [\d.]+ MB, in [\d.]+ s \(shared_buffers ",
                    out.stdout), out.stdout
    out = subprocess.run([_exe(), "warm", "--json", "--dsn", pg_dsn], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out
    got = json.loads(out.stdout)
    assert got["bytes_read"] == sum(r["bytes"] for r in got["relations"])
    assert got["relations"][-1]["priority"] == 1 and all(r["read"] for r in got["relations"])


def test_a_role_that_cannot_prewarm_is_told_what_to_ask_for(
    pg_dsn: str, login_dsn: Callable[[str], str]
) -> None:
    """pg_prewarm is not a trusted extension: a reader cannot create it. The command
    says so and what to ask the administrator for; the store is untouched."""
    with SimhashStore(pg_dsn) as store:
        store.add_many(TEXTS, dedup=False)
        reader = login_dsn("simhash_reader")
        with SimhashStore(reader, migrate=False) as as_reader, pytest.raises(
                WarmError, match="CREATE EXTENSION pg_prewarm"):
            as_reader.warm()
        out = subprocess.run([_exe(), "warm", "--dsn", reader], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 1, out
        assert "CREATE EXTENSION pg_prewarm" in out.stderr and "Traceback" not in out.stderr
        assert store.count() == len(TEXTS)


@needs_own_server
@pytest.mark.skipif(bool(os.environ.get("SIMHASH_PG_TEST_BINDIR")),
                    reason="the embedded server's own settings and libraries")
def test_the_embedded_server_restores_its_cache_when_it_restarts() -> None:
    """An embedded server (its own settings, not a test server's) loads pg_prewarm at
    start: its autoprewarm worker records the buffers and reads them back after a
    restart, so the block indexes are cached before the first look-up."""
    settings = sized_settings()
    assert settings["shared_preload_libraries"] == "'pg_prewarm'"
    assert "shared_preload_libraries" not in sized_settings(small=True)
    settings.update(shared_buffers="32MB", max_connections="20")
    server = LocalServer(temporary_home("shpg-warm-"), settings=settings)
    try:
        dsn = server.start(dbname="warm")
        with SimhashStore(dsn) as store:
            store.add_many(TEXTS, dedup=False)
            store.warm()
            block = next(r.name for r in warm_plan(store.connection) if r.priority == 1
                         and r.bytes > 0)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache SCHEMA public")
            conn.execute("SELECT public.autoprewarm_dump_now()")
        server.stop()
        dsn = server.start(dbname="warm")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SET search_path = simhash, public")
            deadline = time.monotonic() + 30
            while True:  # the worker reads them back in the background
                row = conn.execute(
                    "SELECT count(*) FROM public.pg_buffercache b"
                    " WHERE b.relfilenode = pg_relation_filenode(%s::regclass)"
                    " AND b.reldatabase = (SELECT oid FROM pg_database"
                    "                      WHERE datname = current_database())",
                    [block]).fetchone()
                if (row and row[0] > 0) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert row is not None and row[0] > 0, f"{block} not read back after the restart"
    finally:
        server.destroy()
