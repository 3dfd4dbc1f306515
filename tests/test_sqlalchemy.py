"""simhash_pg.sqlalchemy and examples/sqlalchemy_app.py against the test database.

The app table's near search (near_clause) is checked against brute force
(Python Hamming over every row) and, with EXPLAIN on ~50k rows after
ANALYZE, to use the block indexes (no sequential scan; nothing is switched
off: the query's shape alone must do it).
"""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from sqlalchemy import Column, Integer, MetaData, Table, event, insert, literal, select
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session

from simhash_pg.bits import MAX_FINGERPRINT, blocks, hamming_array, to_signed
from simhash_pg.bits import hamming as py_hamming
from simhash_pg.sqlalchemy import (
    Fingerprint,
    add_block_columns,
    block,
    block_columns,
    block_indexes,
    documents_table,
    drop_block_columns,
    hamming,
    near,
    near_clause,
    near_id,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sqlalchemy_app.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sqlalchemy_app_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def session(example: ModuleType, pg_dsn: str) -> Iterator[Session]:
    # an app's session: the store's schema is not on its search_path
    engine = example.make_engine(make_conninfo(pg_dsn, options="-c search_path=public"))
    example.Base.metadata.create_all(engine)
    try:
        with Session(engine) as s:
            yield s
    finally:
        engine.dispose()


def _flip(fp: int, n: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), n):
        fp ^= 1 << bit
    return fp


def _spread(centre: int, rng: random.Random) -> int:
    """A variant 3 bits from ``centre``, one bit in each of three blocks: of the
    four pair probes of near_clause(k=3) only one finds it (the block left
    equal, then the next one, 1 bit off), so a missing probe shows."""
    v = centre
    for b in rng.sample(range(4), 3):
        v ^= 1 << (16 * b + rng.randrange(16))
    return v


def _fill(session: Session, post: Any, rng: random.Random,
          n: int = 50_000) -> tuple[list[int], list[int]]:
    """n fingerprints: clusters of near variants around uniform centres (0..5
    bits off anywhere, 1..4 bits inside one block, or one bit in each of three
    blocks), inserted with ids 1..n in order; returns them and the centres."""
    fps: list[int] = [0, MAX_FINGERPRINT, 1 << 63, (1 << 63) - 1]  # the edges of the sign
    centres: list[int] = []
    while len(fps) < n:
        centre = rng.getrandbits(64)
        centres.append(centre)
        fps.append(centre)
        for _ in range(rng.randrange(0, 8)):
            r = rng.random()
            if r < 0.3:
                fps.append(_spread(centre, rng))
            elif r < 0.5:
                b = rng.randrange(4)
                fps.append(centre ^ sum(1 << bit for bit in rng.sample(
                    range(16 * b, 16 * b + 16), rng.randrange(1, 5))))
            else:
                fps.append(_flip(centre, rng.randrange(0, 6), rng))
    fps = fps[:n]
    table = post.__table__
    for start in range(0, n, 5000):
        session.execute(insert(table), [{"id": i + 1, "title": f"p{i + 1}", "fingerprint": fp}
                                        for i, fp in enumerate(fps[start:start + 5000], start)])
    session.commit()
    return fps, centres


def _explain(session: Session, stmt: Any) -> Any:
    """EXPLAIN (FORMAT JSON) of ``stmt`` as SQLAlchemy sends it, parameters and all."""
    conn = session.connection()

    def prefix(conn_: Any, cursor: Any, statement: str, params: Any, context: Any,
               executemany: bool) -> tuple[str, Any]:
        return "EXPLAIN (FORMAT JSON) " + statement, params

    event.listen(conn, "before_cursor_execute", prefix, retval=True)
    try:
        return conn.execute(stmt).scalar_one()
    finally:
        event.remove(conn, "before_cursor_execute", prefix)


def test_example_runs(example: ModuleType, pg_dsn: str) -> None:
    out = example.main(pg_dsn)
    assert out["posts"] == [(1, "a", 0), (2, "a2", 3)]
    # near_id leaves stored document "a" itself out
    assert out["articles"] == [("article a2", "example:a2", 3)]


def test_example_as_a_script(pg_dsn: str) -> None:
    out = subprocess.run([sys.executable, str(EXAMPLE), pg_dsn], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert out.splitlines() == ["post 1 a 0", "post 2 a2 3", "article article a2 example:a2 3"]


def test_fingerprint_type_round_trip_and_range(session: Session, example: ModuleType,
                                               pg: psycopg.Connection) -> None:
    Post = example.Post
    values = [0, 1, (1 << 63) - 1, 1 << 63, MAX_FINGERPRINT]
    session.add_all([Post(title=str(v), fingerprint=v) for v in values])
    session.commit()
    got = session.execute(select(Post.fingerprint).order_by(Post.id)).scalars().all()
    assert got == values
    # stored as the signed bigint the store keeps, blocks as PostgreSQL makes them
    rows = pg.execute("SELECT fingerprint, b0, b1, b2, b3 FROM example_posts ORDER BY id")
    assert rows.fetchall() == [(to_signed(v), *blocks(v)) for v in values]
    session.add(Post(title="bad", fingerprint=1 << 64))
    with pytest.raises(StatementError, match="out of range"):
        session.commit()
    session.rollback()
    with pytest.raises(ValueError, match="out of range"):
        hamming(Post.fingerprint, -1)
    with pytest.raises(ValueError, match="out of range"):
        near_clause(Post, 1 << 64, 3)


def test_expressions(session: Session, example: ModuleType) -> None:
    Post = example.Post
    a, b = 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210 ^ 0x0F
    session.add(Post(id=1, title="a", fingerprint=a))
    session.commit()
    row = session.execute(select(
        Post.fingerprint.hamming(b), hamming(a, b), hamming(Post.fingerprint, literal(5)),
        *(block(Post.fingerprint, i) for i in range(4)), Post.fingerprint.within(a ^ 7, 3),
        Post.fingerprint.within(a ^ 15, 3), Post.fingerprint == a)).one()
    assert row[0] == row[1] == py_hamming(a, b)
    assert row[2] == py_hamming(a, 5)
    assert tuple(row[3:7]) == blocks(a)
    assert tuple(row[7:]) == (True, False, True)


def test_near_clause_matches_brute_force_and_uses_indexes(
        session: Session, example: ModuleType) -> None:
    Post = example.Post
    rng = random.Random(31)
    fps, centres = _fill(session, Post, rng)
    session.connection().exec_driver_sql("ANALYZE example_posts")
    session.commit()
    queries = rng.sample(centres, 16) + [fps[i] for i in rng.sample(range(len(fps)), 4)] + [
        _flip(fps[rng.randrange(len(fps))], 2, rng) for _ in range(6)] + [
        0, MAX_FINGERPRINT, 1 << 63]
    arr = np.array(fps, dtype=np.uint64)
    found = 0
    for k in (0, 1, 2, 3, 5, 9, 13, 20):
        for q in queries if k <= 3 else queries[:4]:
            got = example.posts_near(session, q, k)
            dist = hamming_array(arr, np.full(len(fps), q, dtype=np.uint64))
            want = [(int(dist[i]), int(i) + 1)
                    for i in sorted(np.flatnonzero(dist <= k), key=lambda i: (dist[i], i))]
            assert [(d, i) for i, _, d in got] == want, (k, q)
            found += sum(1 for d, _ in want if d == 3) if k == 3 else 0
    assert found >= 16  # the spread variants of the centres at least
    # the planner's choice on ~50k analysed rows, k <= 3 and above
    for k in (0, 3, 7):
        stmt = select(Post.id).where(near_clause(Post, queries[0], k))
        plan = _explain(session, stmt)
        text = json.dumps(plan)
        assert "Seq Scan" not in text, (k, text)
        used = {f"example_posts_b{i}_idx" for i in range(4)}
        assert all(f'"{name}"' in text for name in used), (k, text)


def test_core_table_and_store_joins(example: ModuleType, pg_dsn: str) -> None:
    """block_columns/block_indexes in a Core Table; documents_table joined to
    simhash_near (fingerprint and lateral) and simhash_near_id."""
    from simhash_pg import SimhashStore, fingerprint

    md = MetaData()
    mine = Table("mine", md, Column("id", Integer, primary_key=True),
                 Column("fingerprint", Fingerprint, nullable=False),
                 Column("doc_id", Integer), *block_columns(), *block_indexes("mine"))
    texts = ["one two three four five six seven eight nine ten eleven twelve",
             "one two three four five six seven eight nine ten eleven twelve!",
             "something else entirely, a sentence about other matters"]
    with SimhashStore(pg_dsn) as store:
        ids = [int(store.add(t, key=f"k{i}", dedup=False).id or 0) for i, t in enumerate(texts)]
    docs = documents_table()
    engine = example.make_engine(pg_dsn)
    try:
        md.create_all(engine)
        with engine.begin() as conn:
            conn.execute(insert(mine), [{"id": i, "fingerprint": fingerprint(t), "doc_id": d}
                                        for i, (t, d) in enumerate(zip(texts, ids, strict=True))])
            stored = dict(conn.execute(select(docs.c.id, docs.c.fingerprint)).all())
            assert stored == {d: fingerprint(t) for d, t in zip(ids, texts, strict=True)}
            q = fingerprint(texts[0])
            n = near(q, 3)
            got = conn.execute(select(docs.c.key, n.c.distance)
                               .join(n, n.c.id == docs.c.id)
                               .order_by(n.c.distance, docs.c.id)).all()
            want = sorted((py_hamming(fp, q), d) for d, fp in stored.items()
                          if py_hamming(fp, q) <= 3)
            assert [(r.distance, r.key) for r in got] == [
                (dist, f"k{ids.index(d)}") for dist, d in want]
            # each app row's stored neighbours, through its own fingerprint (lateral)
            lat = near(mine.c.fingerprint, 3).lateral()
            pairs = conn.execute(select(mine.c.id, lat.c.id).select_from(mine)
                                 .join(lat, lat.c.id != mine.c.doc_id)
                                 .order_by(mine.c.id, lat.c.id)).all()
            want_pairs = [(i, d) for i, t in enumerate(texts) for d, fp in sorted(stored.items())
                          if d != ids[i] and py_hamming(fp, fingerprint(t)) <= 3]
            assert [tuple(p) for p in pairs] == want_pairs
            by_id = conn.execute(select(near_id(ids[0], 64).c.id)).scalars().all()
            assert sorted(by_id) == sorted(ids[1:])
            assert ids[0] not in by_id
    finally:
        engine.dispose()



def test_alembic_helper_adds_blocks_to_a_table_with_rows(example: ModuleType, pg_dsn: str,
                                                         pg: psycopg.Connection) -> None:
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    values = [0, 5, 1 << 63, MAX_FINGERPRINT]
    pg.execute("CREATE TABLE public.legacy (id integer PRIMARY KEY, fingerprint bigint NOT NULL)")
    with pg.cursor() as cur:
        cur.executemany("INSERT INTO legacy VALUES (%s, %s)",
                        [(i, to_signed(v)) for i, v in enumerate(values)])
    engine = example.make_engine(pg_dsn)
    try:
        with engine.begin() as conn:
            add_block_columns(Operations(MigrationContext.configure(conn)), "legacy")
        rows = pg.execute("SELECT fingerprint, b0, b1, b2, b3 FROM legacy ORDER BY id")
        assert rows.fetchall() == [(to_signed(v), *blocks(v)) for v in values]
        defs: dict[str, str] = dict(pg.execute("SELECT indexname, indexdef FROM pg_indexes "
                               "WHERE tablename = 'legacy' AND indexname LIKE '%_b%_idx'"))
        assert defs == {f"legacy_b{i}_idx": f"CREATE INDEX legacy_b{i}_idx ON public.legacy "
                        f"USING btree (b{i}, b{(i + 1) % 4}, fingerprint) "
                        "WITH (deduplicate_items=off)" for i in range(4)}
        legacy = Table("legacy", MetaData(), Column("id", Integer, primary_key=True),
                       Column("fingerprint", Fingerprint), *block_columns())
        with engine.connect() as conn:
            got = conn.execute(select(legacy.c.id).where(near_clause(legacy, 4, 1))).all()
            assert sorted(r.id for r in got) == [0, 1]  # 0 and 5 are 1 bit from 4
        with engine.begin() as conn:
            drop_block_columns(Operations(MigrationContext.configure(conn)), "legacy")
        assert pg.execute("SELECT count(*) FROM pg_indexes WHERE tablename = 'legacy'"
                          ).fetchone() == (1,)
    finally:
        engine.dispose()
