"""Two shards behind a postgres_fdw coordinator: near() stays exact.

Three throwaway servers on Unix sockets (docs/scaling.md): two shards, each
a normal migrated store with the block indexes, and a coordinator whose
``simhash_documents`` is a table partitioned by hash of id into foreign
tables on the shards. Fingerprints are loaded through the coordinator
(COPY routes each row to its shard) and ``simhash_near`` on the coordinator
is compared with brute force. The coordinator's DDL is read from
docs/scaling.md, so the documented SQL is the tested SQL.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from lab.bench.hnsw import copy_documents, exact_neighbours, planted_data

# three throwaway servers per module run: in CI's slow run (pytest -m slow)
pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parent.parent / "docs" / "scaling.md"
N_SHARDS = 2
N_ROWS = 10_000
N_QUERIES = 60


def doc_sql(name: str) -> str:
    """The ```sql block between <!-- name:begin --> and <!-- name:end --> in the doc."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(rf"<!-- {name}:begin -->\s*```sql\n(.*?)```\s*<!-- {name}:end -->", text, re.S)
    assert m, f"no {name} block in {DOC}"
    return m.group(1)


@dataclass
class Cluster:
    shipped: str  # coordinator database with the store's own simhash_near
    coordinator: str  # coordinator database with the doc's coordinator simhash_near
    shards: list[str]
    stored: np.ndarray
    queries: np.ndarray


def _make_coordinator(dsn: str, shard_sockets: list[Path], *, near: bool) -> None:
    from simhash_pg.db import migrate

    migrate.upgrade(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS postgres_fdw")
        conn.execute(doc_sql("coordinator-table"))
        for i, sock in enumerate(shard_sockets):
            server = sql.Identifier(f"shard{i}")
            conn.execute(sql.SQL(
                "CREATE SERVER {} FOREIGN DATA WRAPPER postgres_fdw OPTIONS"
                " (host {}, port '5432', dbname 'shard', async_capable 'true',"
                "  fetch_size '10000', batch_size '1000')"
            ).format(server, sql.Literal(str(sock))))
            conn.execute(sql.SQL(
                "CREATE USER MAPPING FOR CURRENT_USER SERVER {} OPTIONS (user 'postgres')"
            ).format(server))
            conn.execute(sql.SQL(
                "CREATE FOREIGN TABLE {} PARTITION OF simhash_documents"
                " FOR VALUES WITH (MODULUS {}, REMAINDER {})"
                " SERVER {} OPTIONS (schema_name 'simhash', table_name 'simhash_documents')"
            ).format(sql.Identifier(f"simhash_documents_shard{i}"),
                     sql.Literal(N_SHARDS), sql.Literal(i), server))
        if near:
            conn.execute(doc_sql("coordinator-near"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    from simhash_pg.db import migrate
    from simhash_pg.db.server import LocalServer, ServerError, sized_settings, temporary_home

    bindir = os.environ.get("SIMHASH_PG_TEST_BINDIR") or None
    servers: list[LocalServer] = []
    try:
        for name in ("coord", *(f"shard{i}" for i in range(N_SHARDS))):
            home = temporary_home(f"shpg-fdw-{name}-")
            servers.append(LocalServer(home, bindir=Path(bindir) if bindir else None,
                                       settings=sized_settings(small=True)))
        try:
            coord = servers[0].start(dbname="postgres")
        except (ServerError, OSError) as exc:
            pytest.skip(f"no local PostgreSQL server to run shards on: {exc}")
        with psycopg.connect(coord, autocommit=True) as conn:
            if not conn.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'postgres_fdw'"
            ).fetchone():
                pytest.skip("postgres_fdw is not installed with this PostgreSQL")
        shards = [s.start(dbname="shard") for s in servers[1:]]
        for dsn in shards:
            migrate.upgrade(dsn)
        sockets = [s.socket_dir for s in servers[1:]]
        shipped = servers[0].start(dbname="coord_shipped")
        coordinator = servers[0].start(dbname="coord")
        _make_coordinator(shipped, sockets, near=False)
        _make_coordinator(coordinator, sockets, near=True)

        data = planted_data(N_ROWS, N_QUERIES, 6, seed=7)
        with psycopg.connect(coordinator, autocommit=True) as conn:
            copy_documents(conn, data.stored)  # routed to the shards by hash of id
            conn.execute("SELECT setval('simhash_documents_id_seq', %s)", [N_ROWS])
        for dsn in shards:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("VACUUM (ANALYZE) simhash_documents")  # index-only scans
        for dsn in (shipped, coordinator):
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("ANALYZE simhash_documents")  # samples the shards
        yield Cluster(shipped, coordinator, shards, data.stored, data.queries)
    finally:
        for s in servers:
            s.destroy()
            shutil.rmtree(s.home, ignore_errors=True)


def _signed(fps: np.ndarray) -> list[int]:
    return [int(x) for x in np.asarray(fps, dtype=np.uint64).view(np.int64)]


def _near_all(dsn: str, queries: list[int], k: int) -> list[list[tuple[int, int]]]:
    with psycopg.connect(dsn) as conn:
        return [
            conn.execute("SELECT id, distance FROM simhash_near(%s, %s)", [q, k],
                         prepare=True).fetchall()
            for q in queries
        ]


def _expected(cluster: Cluster, k: int) -> list[list[tuple[int, int]]]:
    out = []
    for q, ids in zip(cluster.queries, exact_neighbours(cluster.stored, cluster.queries, k),
                      strict=True):
        dist = np.bitwise_count(cluster.stored[ids - 1] ^ q)
        out.append(sorted(zip(dist.tolist(), ids.tolist(), strict=True)))
    return [[(i, d) for d, i in row] for row in out]


def test_rows_are_spread_over_both_shards(cluster: Cluster) -> None:
    counts = []
    for dsn in cluster.shards:
        with psycopg.connect(dsn) as conn:
            counts.append(conn.execute("SELECT count(*) FROM simhash_documents").fetchone()[0])
    assert sum(counts) == N_ROWS
    assert min(counts) > N_ROWS // 3


@pytest.mark.parametrize("k", [0, 3, 6, 10, 20])
def test_coordinator_near_is_exact(cluster: Cluster, k: int) -> None:
    assert _near_all(cluster.coordinator, _signed(cluster.queries), k) == _expected(cluster, k)


@pytest.mark.parametrize("k", [0, 3, 6])
def test_shipped_near_is_exact_on_a_coordinator(cluster: Cluster, k: int) -> None:
    """The store's own simhash_near, unchanged, is exact too (but see the plans:
    it pulls whole shards, so a few queries suffice here)."""
    few = 20
    expected = _expected(cluster, k)[:few]
    assert _near_all(cluster.shipped, _signed(cluster.queries[:few]), k) == expected


def test_near_many_on_the_coordinator(cluster: Cluster) -> None:
    queries = _signed(cluster.queries)
    with psycopg.connect(cluster.coordinator) as conn:
        rows = conn.execute(
            "SELECT query, id, distance FROM simhash_near_many(%s, 6)", [queries]
        ).fetchall()
    got: list[list[tuple[int, int]]] = [[] for _ in queries]
    for query, id_, dist in rows:
        got[query - 1].append((id_, dist))
    assert got == _expected(cluster, 6)


def _nested_plans(dsn: str, query: str, params: list[object]) -> list[str]:
    """The plans of the statements run inside a function call (auto_explain)."""
    notices: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        conn.execute("LOAD 'auto_explain'")
        for name, value in [("log_min_duration", "0"), ("log_nested_statements", "on"),
                            ("log_analyze", "on"), ("log_verbose", "on"),
                            ("log_timing", "off")]:
            conn.execute(sql.SQL("SET {} = {}").format(
                sql.Identifier("auto_explain", name), sql.Literal(value)))
        conn.execute("SET client_min_messages = log")
        conn.execute(query, params).fetchall()
    return [n for n in notices if "Remote SQL" in n]


@pytest.mark.parametrize("k", [3, 6, 20])
def test_coordinator_plans_run_on_the_shards(cluster: Cluster, k: int) -> None:
    q = _signed(cluster.queries[:1])[0]
    plans = _nested_plans(cluster.coordinator, "SELECT * FROM simhash_near(%s, %s)", [q, k])
    assert len(plans) == 1, plans
    plan = plans[0]
    remote = re.findall(r"Remote SQL: (.*)", plan)
    # one statement per shard, all in flight at once
    assert len(remote) == N_SHARDS and plan.count("Async Foreign Scan") == N_SHARDS, plan
    # filtered on the shards: nothing pulls a whole shard, nothing is filtered locally
    assert all(" WHERE " in r and "bit_count((fingerprint #" in r for r in remote), remote
    assert not re.search(r"^\s*Filter:", plan, re.M), plan
    if k <= 15:  # the block probes, as a parameter or a folded constant
        for i in range(4):
            assert all(re.search(rf"b{i} = ANY \((\$\d|'\{{)", r) for r in remote), remote


def test_lookups_by_id_prune_to_one_shard(cluster: Cluster) -> None:
    with psycopg.connect(cluster.coordinator) as conn:
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM simhash_documents WHERE id = 5"
        ))
        row = conn.execute("SELECT fingerprint FROM simhash_documents WHERE id = 5").fetchone()
    assert plan.count("Foreign Scan") == 1 and "WHERE ((id = 5))" in plan, plan
    assert row is not None and row[0] == _signed(cluster.stored[4:5])[0]
