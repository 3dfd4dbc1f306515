"""Revision 0025: a big batch's look-up skips the partitions that hold no page.

Through the real database: ``simhash_near_many`` of 200 or more fingerprints
at k <= 3 equals brute force over rows spread across some partitions while
others stay empty, and it leaves the empty partitions' indexes unsearched
(the transaction's own index-scan counts), where a batch of 199 and a caller
who may not read the partitions by name search them; the check holds every
leaf's lock until the transaction ends; the revision goes down and up with
the answers unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import psycopg
import pytest
from _days import past_day_partitions
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from simhash_pg.bits import hamming, to_signed
from simhash_pg.db import migrate

BIG = 200  # the batch size from which the revision plans per call (sql/current/near.sql)

MANY = "SELECT query, id, distance FROM simhash_near_many(%s, %s)"
# index scans this transaction started on one partition (pg_stat_xact_*: no flush needed)
SCANS = "SELECT coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables WHERE relid = %s::regclass"


def _store(pg: psycopg.Connection, rnd: random.Random, n: int) -> dict[int, int]:
    """n rows over today and the last two days, some near copies of others: id -> fingerprint.

    Tomorrow's and the default partition stay empty."""
    past_day_partitions(pg, 2)
    fps: list[int] = []
    for _ in range(n):
        if fps and rnd.random() < 0.4:
            x = rnd.choice(fps)
            for bit in rnd.sample(range(64), rnd.randint(0, 4)):
                x ^= 1 << bit
            fps.append(x)
        else:
            fps.append(rnd.getrandbits(64))
    days = [rnd.choice([0.0, 1.0, 1.5]) for _ in fps]
    rows = pg.execute(
        "INSERT INTO simhash_documents (fingerprint, created_at)"
        " SELECT f, now() - make_interval(secs => d * 86400)"
        " FROM unnest(%s::bigint[], %s::float8[]) AS x (f, d) RETURNING id, fingerprint",
        [[to_signed(f) for f in fps], days],
    ).fetchall()
    return {id_: f & (2**64 - 1) for id_, f in rows}


def _queries(rnd: random.Random, stored: dict[int, int], n: int) -> list[int]:
    """Near copies (0-4 bits) of stored rows, and fingerprints near nothing."""
    values = list(stored.values())
    out = []
    for _ in range(n):
        if rnd.random() < 0.6:
            x = rnd.choice(values)
            for bit in rnd.sample(range(64), rnd.randint(0, 4)):
                x ^= 1 << bit
            out.append(x)
        else:
            out.append(rnd.getrandbits(64))
    return out


def _brute(stored: dict[int, int], queries: list[int], k: int) -> list[tuple[int, int, int]]:
    """(query, id, distance) within k, as simhash_near_many orders them."""
    return sorted(((qi, id_, hamming(fp, q)) for qi, q in enumerate(queries, 1)
                   for id_, fp in stored.items() if hamming(fp, q) <= k),
                  key=lambda r: (r[0], r[2], r[1]))


def _empty_partitions(pg: psycopg.Connection) -> list[str]:
    return [r[0] for r in pg.execute(
        "SELECT relid::regclass::text FROM pg_partition_tree('simhash_documents')"
        " WHERE isleaf AND pg_relation_size(relid) = 0")]


def _scans_on(conn: psycopg.Connection, tables: list[str], run: Callable[[], object]) -> int:
    """Index scans that ``run()`` starts on ``tables``, counted inside one transaction."""
    with conn.transaction():
        before = sum(conn.execute(SCANS, [t]).fetchone()[0] for t in tables)  # type: ignore[index]
        run()
        after = sum(conn.execute(SCANS, [t]).fetchone()[0] for t in tables)  # type: ignore[index]
    return after - before


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(BIG - 1, BIG + 60),
       k=st.integers(0, 3))
@example(seed=1, size=BIG, k=3)
@example(seed=2, size=BIG - 1, k=3)
def test_a_big_batch_equals_brute_force_and_skips_empty_partitions(
        pg: psycopg.Connection, seed: int, size: int, k: int) -> None:
    pg.execute("TRUNCATE simhash_documents")
    rnd = random.Random(seed)
    stored = _store(pg, rnd, rnd.randint(50, 400))
    empty = _empty_partitions(pg)
    assert len(empty) >= 2  # tomorrow's and the default
    queries = _queries(rnd, stored, size)
    got: list[list[tuple[int, int, int]]] = []
    scans = _scans_on(pg, empty, lambda: got.append(
        pg.execute(MANY, [[to_signed(q) for q in queries], k]).fetchall()))
    assert got[0] == _brute(stored, queries, k)
    # a batch from BIG on leaves the empty partitions alone; a smaller one
    # takes the cached plan, which searches them for every query, as does
    # the single-block form (k <= 3 takes pairs on PostgreSQL 17+ and, before
    # it, from 10M rows: simhash_use_pairs)
    pairs = pg.execute("SELECT simhash_use_pairs(%s)", [k]).fetchone()[0]  # type: ignore[index]
    assert (scans == 0) if size >= BIG and pairs else (scans > 0)


def test_a_caller_who_reads_only_the_parent_gets_the_same_answer(
        pg: psycopg.Connection, login_dsn: Callable[[str], str]) -> None:
    rnd = random.Random(7)
    stored = _store(pg, rnd, 300)
    queries = [to_signed(q) for q in _queries(rnd, stored, BIG + 10)]
    want = pg.execute(MANY, [queries, 3]).fetchall()
    assert want == _brute(stored, [q & (2**64 - 1) for q in queries], 3)
    empty = _empty_partitions(pg)
    with psycopg.connect(login_dsn("simhash_reader")) as reader:
        # the analysts' role reads simhash_documents, not its partitions by name
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            reader.execute(f"SELECT 1 FROM {empty[0]} LIMIT 1")
        reader.rollback()
        scans = _scans_on(reader, empty, lambda: reader.execute(MANY, [queries, 3]).fetchall())
        assert reader.execute(MANY, [queries, 3]).fetchall() == want
    assert scans > 0  # the cached plan, over the parent


def test_every_partition_holding_pages_takes_the_cached_plan(pg: psycopg.Connection) -> None:
    rnd = random.Random(3)
    stored = _store(pg, rnd, 200)
    # rows in tomorrow's and the default partition too: no leaf is empty
    pg.execute("INSERT INTO simhash_documents (fingerprint, created_at)"
               " VALUES (1, now() + interval '1 day'), (2, now() + interval '30 days')")
    stored.update({id_: f for id_, f in pg.execute(
        "SELECT id, fingerprint FROM simhash_documents WHERE fingerprint IN (1, 2)")})
    assert _empty_partitions(pg) == []
    queries = [*_queries(rnd, stored, BIG), 3]
    assert pg.execute(MANY, [[to_signed(q) for q in queries], 3]).fetchall() \
        == _brute(stored, queries, 3)


def test_migration_0025_down_and_up_keeps_the_answers(
        pg_dsn: str, pg: psycopg.Connection) -> None:
    rnd = random.Random(11)
    stored = _store(pg, rnd, 300)
    queries = [to_signed(q) for q in _queries(rnd, stored, BIG + 5)]
    want = pg.execute(MANY, [queries, 3]).fetchall()
    body = "SELECT prosrc FROM pg_proc WHERE proname = 'simhash_near_many'"
    assert "pg_partition_tree" in pg.execute(body).fetchone()[0]  # type: ignore[index]
    assert migrate.downgrade_losses_between("0025", "0024") == []
    migrate.downgrade(pg_dsn, "0024")
    assert "pg_partition_tree" not in pg.execute(body).fetchone()[0]  # type: ignore[index]
    assert pg.execute(MANY, [queries, 3]).fetchall() == want
    migrate.upgrade(pg_dsn)
    assert pg.execute(MANY, [queries, 3]).fetchall() == want
    migrate.check(pg_dsn)


def test_the_partitions_checked_stay_locked_until_the_batch_commits(
        pg: psycopg.Connection) -> None:
    # the sizes are read, then the partitions that hold pages named: one
    # dropped or detached in between would break the query, so the check
    # (pg_partition_tree) must lock every leaf, the empty ones the query
    # leaves out too, until the transaction ends
    rnd = random.Random(5)
    stored = _store(pg, rnd, 100)
    queries = [to_signed(q) for q in _queries(rnd, stored, BIG)]
    leaves = {r[0] for r in pg.execute(
        "SELECT relid::regclass::text FROM pg_partition_tree('simhash_documents') WHERE isleaf")}
    with pg.transaction():
        pg.execute(MANY, [queries, 3]).fetchall()
        held = {r[0] for r in pg.execute(
            "SELECT relation::regclass::text FROM pg_locks WHERE pid = pg_backend_pid()"
            " AND locktype = 'relation' AND mode = 'AccessShareLock' AND granted")}
    assert leaves <= held
