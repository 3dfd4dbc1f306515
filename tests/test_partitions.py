"""Revision 0005: daily partitions, keys unique across them, partition maintenance."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import psycopg
import pytest
from _days import catch_up_to_today, past_day_partitions, utc_today
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_pg import Doc
from simhash_pg.bits import hamming, to_signed, to_unsigned
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore
from simhash_pg.store.retention import purge

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HYPO = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _partitions(pg: psycopg.Connection) -> dict[str, bool]:
    """name -> is_default, for every partition of simhash_documents."""
    rows = pg.execute("SELECT partition::text, is_default FROM simhash_partitions()").fetchall()
    return {r[0]: r[1] for r in rows}


def _insert(pg: psycopg.Connection, rows: list[tuple[str | None, int, float]]) -> list[int]:
    """(key, fingerprint, days ago) rows with explicit created_at; their ids."""
    ids = []
    for key, fp, ago in rows:
        row = pg.execute(
            "INSERT INTO simhash_documents (key, fingerprint, created_at)"
            " VALUES (%s, %s, now() - make_interval(secs => %s)) RETURNING id",
            [key, to_signed(fp), ago * 86400],
        ).fetchone()
        assert row is not None
        ids.append(row[0])
    return ids


def _key_partitions(pg: psycopg.Connection) -> set[str]:
    return {r[0] for r in pg.execute(
        "SELECT relid::regclass::text FROM pg_partition_tree('simhash_text_keys') WHERE isleaf")}


def test_fresh_store_layout(pg: psycopg.Connection) -> None:
    parts = _partitions(pg)
    assert pg.execute(
        "SELECT relkind FROM pg_class WHERE oid = 'simhash_documents'::regclass"
    ).fetchone() == ("p",)
    # a fresh store has no legacy partition: today, one day ahead (two before
    # revision 0013 dropped the second), the default one
    today = datetime.now(timezone.utc).date()
    days = [f"simhash_documents_p{(today + timedelta(d)).strftime('%Y%m%d')}" for d in range(2)]
    assert parts == {**dict.fromkeys(days, False), "simhash_documents_default": True}
    # every partition has the parent's indexes (block, key, brin, signature, ...) and triggers
    for name in parts:
        n_idx = pg.execute(
            "SELECT count(*) FROM pg_index WHERE indrelid = %s::regclass", [name]
        ).fetchone()
        assert n_idx == (9,), name
    assert pg.execute(
        "SELECT count(*) FROM pg_index WHERE indrelid = 'simhash_documents'::regclass"
    ).fetchone() == (9,)
    # the text keys' partitions mirror them (revision 0017)
    assert _key_partitions(pg) == {n.replace("documents", "text_keys") for n in parts}
    # ensure is idempotent: nothing more to make
    assert pg.execute("SELECT * FROM simhash_ensure_partitions()").fetchall() == []
    assert _partitions(pg) == parts
    assert pg.execute("SELECT * FROM simhash_ensure_partitions(4)").fetchall() == [
        (f"simhash_documents_p{(today + timedelta(d)).strftime('%Y%m%d')}",) for d in (2, 3, 4)
    ]
    for bad in (-1, 367, None):
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            pg.execute("SELECT simhash_ensure_partitions(%s)", [bad])


def _schema(pg: psycopg.Connection) -> dict[str, Any]:
    """What revision 0003 defined about simhash_documents, comparably."""
    t = "'simhash_documents'::regclass"
    return {
        "columns": pg.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
            " a.attidentity, a.attgenerated, pg_get_expr(d.adbin, d.adrelid)"
            " FROM pg_attribute a LEFT JOIN pg_attrdef d"
            " ON (d.adrelid, d.adnum) = (a.attrelid, a.attnum)"
            f" WHERE a.attrelid = {t} AND a.attnum > 0 AND NOT a.attisdropped"
            " ORDER BY a.attnum"
        ).fetchall(),
        "indexes": sorted(pg.execute(
            f"SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = {t}"
        ).fetchall()),
        # (PostgreSQL 18 names NOT NULL constraints; their numeric suffix
        # depends on the names taken when the table was made: not compared)
        "constraints": sorted(pg.execute(
            "SELECT CASE WHEN contype = 'n' THEN '' ELSE conname END,"
            f" pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = {t}"
        ).fetchall()),
        "table": pg.execute(
            f"SELECT relkind, reloptions, relacl::text[] FROM pg_class WHERE oid = {t}"
        ).fetchall(),
        "sequence": pg.execute(
            "SELECT pg_get_serial_sequence('simhash_documents', 'id')"
        ).fetchall(),
        "functions": sorted(pg.execute(
            "SELECT proname, md5(prosrc), proacl::text[] FROM pg_proc"
            " WHERE proname LIKE 'simhash%%' AND pronamespace = current_schema()::regnamespace"
        ).fetchall()),
        "tables": sorted(pg.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()),
    }


_ROWS = (
    "SELECT id, key, fingerprint, duplicate_of, created_at, meta, verify_text, sentence_sig"
    " FROM simhash_documents ORDER BY id"
)


def test_a_clone_of_yesterdays_template_is_laid_out_for_today(pg: psycopg.Connection) -> None:
    # the session's template is migrated once: a run that crosses midnight UTC clones
    # yesterday's layout (yesterday and today), which the fixture must bring to today's
    fresh = _partitions(pg)
    assert not catch_up_to_today(pg, utc_today())  # same day: nothing to do
    past_day_partitions(pg, 1)
    tomorrow = (utc_today() + timedelta(1)).strftime("%Y%m%d")
    pg.execute(f"DROP TABLE simhash_documents_p{tomorrow}")
    assert _partitions(pg) != fresh
    assert catch_up_to_today(pg, utc_today() - timedelta(1))
    assert _partitions(pg) == fresh


def test_upgrade_from_0003_attaches_the_table_and_downgrade_restores_it(
    pg: psycopg.Connection, pg_dsn: str
) -> None:
    migrate.downgrade(pg_dsn, "0003")
    schema_0003 = _schema(pg)
    assert schema_0003["table"][0][0] == "r"
    pg.execute(
        "INSERT INTO simhash_documents (key, fingerprint, created_at, meta, sentence_sig)"
        " SELECT CASE WHEN g % 3 = 0 THEN NULL ELSE 'k' || g END, g * 7919 - 40000,"
        " now() - make_interval(hours => g % 100), jsonb_build_object('g', g), g"
        " FROM generate_series(1, 3000) AS g"
    )
    pg.execute("UPDATE simhash_documents SET duplicate_of = id - 1 WHERE id % 10 = 0")
    pg.execute("SELECT nextval(pg_get_serial_sequence('simhash_documents', 'id'))")  # a gap
    rows = pg.execute(_ROWS).fetchall()
    filenode = pg.execute(
        "SELECT relfilenode FROM pg_class WHERE oid = 'simhash_documents'::regclass"
    ).fetchone()

    migrate.upgrade(pg_dsn)
    assert migrate.current(pg_dsn) == migrate.HEAD
    migrate.check(pg_dsn)
    parts = _partitions(pg)
    assert "simhash_documents_legacy" in parts and "simhash_documents_default" in parts
    # not copied: the legacy partition is the old table, same file on disk
    assert pg.execute(
        "SELECT relfilenode FROM pg_class WHERE oid = 'simhash_documents_legacy'::regclass"
    ).fetchone() == filenode
    assert pg.execute(_ROWS).fetchall() == rows
    assert pg.execute(
        "SELECT count(*) FROM ONLY simhash_documents_legacy"
    ).fetchone() == (len(rows),)
    # the legacy partition ends with the day after its newest row (today's here)
    upper = pg.execute(
        "SELECT upper_bound = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
        " + interval '1 day' FROM simhash_partitions()"
        " WHERE partition = 'simhash_documents_legacy'::regclass"
    ).fetchone()
    assert upper == (True,)
    # every key is in simhash_keys; the id counter goes on after the gap
    assert pg.execute("SELECT count(*) FROM simhash_keys").fetchone() == (2000,)
    new_id = pg.execute(
        "INSERT INTO simhash_documents (fingerprint) VALUES (1) RETURNING id"
    ).fetchone()
    assert new_id == (3002,)
    with pytest.raises(psycopg.errors.UniqueViolation):
        pg.execute("INSERT INTO simhash_documents (key, fingerprint, created_at)"
                   " VALUES ('k1', 5, now() + interval '1 day')")
    with SimhashStore(pg_dsn) as store:
        r = store.add(12345, key="k2")
        assert not r.inserted and r.existing_key
        stored = {id_: to_unsigned(fp) for id_, _, fp, *_ in rows} | {3002: 1}
        for q in (stored[5], stored[77] ^ 0b11, stored[2999] ^ (1 << 40)):
            want = sorted((hamming(fp, q), i) for i, fp in stored.items() if hamming(fp, q) <= 6)
            assert [(m.distance, m.id) for m in store.near(q, k=6)] == want
        # removing a row clears the links to it, as the foreign key did
        assert store.remove(9)
        assert store.get(10).duplicate_of is None  # type: ignore[union-attr]
    pg.execute("DELETE FROM simhash_documents WHERE id = 3002")

    migrate.downgrade(pg_dsn, "0003")
    assert _schema(pg) == schema_0003
    after = pg.execute(_ROWS).fetchall()
    assert after == [r if r[0] != 10 else (*r[:3], None, *r[4:]) for r in rows if r[0] != 9]
    assert pg.execute(
        "SELECT nextval(pg_get_serial_sequence('simhash_documents', 'id'))"
    ).fetchone() == (3004,)  # 3003 went to the duplicate key refused above
    migrate.upgrade(pg_dsn)
    migrate.check(pg_dsn)


def test_downgrade_clears_links_into_dropped_partitions(
    pg: psycopg.Connection, pg_dsn: str
) -> None:
    past_day_partitions(pg, 4)
    old, new = _insert(pg, [("a", 1, 3.5), ("b", 2, 0.01)])
    pg.execute("UPDATE simhash_documents SET duplicate_of = %s WHERE id = %s", [old, new])
    assert len(purge(pg, "2d").dropped) >= 2
    assert pg.execute(
        "SELECT duplicate_of FROM simhash_documents WHERE id = %s", [new]
    ).fetchone() == (old,)  # dangling: the partition went whole
    migrate.downgrade(pg_dsn, "0003")
    # the foreign key is back, so the dangling link had to go
    assert pg.execute("SELECT id, key, duplicate_of FROM simhash_documents").fetchall() == [
        (new, "b", None)
    ]


# -- exact across partitions ----------------------------------------------------


@st.composite
def spread(draw: st.DrawFn) -> tuple[list[tuple[int, float]], list[int]]:
    """(fingerprint, days ago) rows over 6 days (and one ahead), with near neighbours."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    bases = [rnd.getrandbits(64) for _ in range(draw(st.integers(1, 12)))]
    fps = list(bases)
    for b in bases:
        for _ in range(rnd.randint(0, 4)):
            x = b
            for bit in rnd.sample(range(64), rnd.randint(0, 7)):
                x ^= 1 << bit
            fps.append(x)
    # round robin over the days: every example spans several partitions
    rows = [(fp, (i % 8) - 1 + 0.01 * rnd.random()) for i, fp in enumerate(fps)]
    queries = [rnd.choice(fps) ^ (1 << rnd.randrange(64)) for _ in range(4)] + [bases[0]]
    return rows, queries


@pytest.mark.slow
@HYPO
@given(data=spread())
def test_search_functions_exact_across_partitions(
    pg: psycopg.Connection, data: tuple[list[tuple[int, float]], list[int]]
) -> None:
    pg.execute("TRUNCATE simhash_documents")
    if len(_partitions(pg)) < 8:
        past_day_partitions(pg, 4)  # days -4..-1 partitioned, older ones in the default partition
    rows, queries = data
    ids = _insert(pg, [(None, fp, ago) for fp, ago in rows])
    stored = dict(zip(ids, (fp for fp, _ in rows), strict=True))
    spread_over = pg.execute(
        "SELECT count(DISTINCT tableoid) FROM simhash_documents"
    ).fetchone()[0]  # type: ignore[index]
    assert spread_over >= min(2, len(rows))
    for k in (0, 3, 6):
        many = pg.execute(
            "SELECT query, id, distance FROM simhash_near_many(%s, %s)",
            [[to_signed(q) for q in queries], k],
        ).fetchall()
        for qi, q in enumerate(queries, 1):
            want = sorted((hamming(fp, q), id_) for id_, fp in stored.items()
                          if hamming(fp, q) <= k)
            got = pg.execute(
                "SELECT distance, id FROM simhash_near(%s, %s)", [to_signed(q), k]
            ).fetchall()
            assert got == want
            assert [(d, i) for qq, i, d in many if qq == qi] == want
        pairs = pg.execute(
            "SELECT a, b, distance FROM simhash_pairs(%s) ORDER BY a, b", [k]).fetchall()
        items = sorted(stored.items())
        want_pairs = [(a, b, hamming(fa, fb)) for n, (a, fa) in enumerate(items)
                      for b, fb in items[n + 1:] if hamming(fa, fb) <= k]
        assert pairs == want_pairs


# -- keys ---------------------------------------------------------------------------


def test_key_unique_across_partitions_whatever_inserts_it(
    pg: psycopg.Connection, pg_dsn: str
) -> None:
    past_day_partitions(pg, 2)
    (first,) = _insert(pg, [("url-1", 0x1111, 1.5)])
    # another day, another partition: still a duplicate key
    with pytest.raises(psycopg.errors.UniqueViolation):
        _insert(pg, [("url-1", 0x2222_0000_0000_0000, 0.0)])
    with pytest.raises(psycopg.errors.UniqueViolation), pg.cursor() as cur, cur.copy(
        "COPY simhash_documents (key, fingerprint, created_at) FROM STDIN"
    ) as copy:
        copy.write_row(("url-1", 7, datetime.now(timezone.utc) + timedelta(days=1)))
    # into the partition directly: the partition has the triggers too
    today = pg.execute(
        "SELECT tableoid::regclass::text FROM simhash_documents WHERE id = %s", [first]
    ).fetchone()[0]  # type: ignore[index]
    with pytest.raises(psycopg.errors.UniqueViolation):
        pg.execute(f"INSERT INTO {today} (key, fingerprint, created_at)"
                   " SELECT 'url-1', 8, created_at FROM simhash_documents WHERE id = %s",
                   [first])
    assert pg.execute("SELECT key, id FROM simhash_keys").fetchall() == [("url-1", first)]
    with SimhashStore(pg_dsn) as store:
        r = store.add(0x3333_0000_0000_0000, key="url-1")
        assert (r.inserted, r.existing_key, r.id, r.distance) == (False, True, first, None)
        res = store.add_many([Doc(0x4444_0000_0000_0000, "url-1"),
                              Doc(0x5555_0000_0000_0000, "url-2")])
        assert (res.existing_keys, res.inserted) == (1, 1)
        # the SQL function the same way
        row = store.connection.execute(
            "SELECT id, inserted, distance FROM simhash_add(%s, 'url-1')", [99]
        ).fetchone()
        assert row == (first, False, None)
        # a deleted key can be stored again
        assert store.remove("url-1")
        assert store.add(0x6666_0000_0000_0000, key="url-1").inserted
    assert pg.execute("SELECT count(*) FROM simhash_keys").fetchone() == (2,)


def test_key_follows_its_row_across_partitions_and_truncate(pg: psycopg.Connection) -> None:
    past_day_partitions(pg, 3)
    (id_,) = _insert(pg, [("moving", 0xABC, 2.5)])
    (linker,) = _insert(pg, [(None, 0xABD, 0.0)])
    pg.execute("UPDATE simhash_documents SET duplicate_of = %s WHERE id = %s", [id_, linker])
    # created_at moves the row to another partition: key and link follow
    pg.execute("UPDATE simhash_documents SET created_at = now() WHERE id = %s", [id_])
    assert pg.execute(
        "SELECT k.id, k.created_at = d.created_at FROM simhash_keys k"
        " JOIN simhash_documents d ON d.key = k.key"
    ).fetchall() == [(id_, True)]
    pg.execute("UPDATE simhash_documents SET key = 'renamed' WHERE id = %s", [id_])
    assert pg.execute("SELECT key FROM simhash_keys").fetchall() == [("renamed",)]
    pg.execute("TRUNCATE simhash_documents")
    assert pg.execute("SELECT count(*) FROM simhash_keys").fetchone() == (0,)


def test_concurrent_adds_of_one_key_store_one_row(pg: psycopg.Connection, pg_dsn: str) -> None:
    rounds = 12
    results: list[list[Any]] = [[], []]
    barrier = threading.Barrier(2)

    def worker(n: int) -> None:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            for r in range(rounds):
                barrier.wait(timeout=30)
                # far-apart fingerprints: the pigeonhole locks do not serialise them
                fp = to_signed((0x0101_0101_0101_0101 * (n + 1)) ^ (r << 20))
                results[n].append(conn.execute(
                    "SELECT id, inserted FROM simhash_add(%s, %s, NULL, 3, 'insert')",
                    [fp, f"same-{r}"],
                ).fetchone())

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(len(r) == rounds for r in results)
    for r in range(rounds):
        a, b = results[0][r], results[1][r]
        assert a[0] == b[0] and sorted([a[1], b[1]]) == [False, True], (r, a, b)
    assert pg.execute(
        "SELECT count(*), count(DISTINCT key) FROM simhash_documents"
    ).fetchone() == (rounds, rounds)


# -- maintenance --------------------------------------------------------------------


def test_drop_partitions_drops_whole_days_and_keeps_the_window(pg: psycopg.Connection) -> None:
    made = past_day_partitions(pg, 4)
    rows = [(f"k{i}", random.Random(i).getrandbits(64), i / 36) for i in range(200)]
    _insert(pg, rows)  # 0 .. 5 days ago: days -5 and older land in the default partition
    in_default = pg.execute(
        "SELECT count(*) FROM simhash_documents_default"
    ).fetchone()[0]  # type: ignore[index]
    assert in_default > 0
    sizes = dict(pg.execute(
        "SELECT partition::text, pg_total_relation_size(partition) FROM simhash_partitions()"
    ).fetchall())
    before = pg.execute(
        "SELECT count(*) FROM simhash_documents WHERE created_at < now() - interval '2 days'"
    ).fetchone()[0]  # type: ignore[index]
    steps = pg.execute(
        "SELECT action, relation, n_rows FROM simhash_drop_partitions('2 days')"
    ).fetchall()
    dropped = [(rel, n) for action, rel, n in steps if action == "drop"]
    # days -4 and -3 end before the cutoff (now - 2 days): dropped; day -2 holds it
    assert [rel for rel, _ in dropped] == sorted(made)[:2]
    assert all(n > 0 and sizes[rel] > 0 for rel, n in dropped)
    assert ("delete", "simhash_documents_default", in_default) in steps
    n_keys = sum(n for _, n in dropped)
    assert ("keys", "simhash_keys", n_keys) in steps
    for rel, _ in dropped:
        assert pg.execute("SELECT to_regclass(%s)", [rel]).fetchone() == (None,)
    # what is left before the cutoff: the partly old day -2 only
    left = pg.execute(
        "SELECT count(*), count(DISTINCT tableoid) FROM simhash_documents"
        " WHERE created_at < now() - interval '2 days'"
    ).fetchone()
    assert left[0] == before - sum(n for _, n in dropped) - in_default  # type: ignore[index]
    assert left[1] <= 1  # type: ignore[index]
    assert pg.execute(
        "SELECT count(*) FROM simhash_documents WHERE created_at >= now() - interval '2 days'"
    ).fetchone()[0] == sum(1 for *_, ago in rows if ago * 86400 <= 2 * 86400 - 1)  # type: ignore[index]
    # keys: exactly the rows left
    assert pg.execute(
        "SELECT count(*) FROM simhash_keys k"
        " FULL JOIN simhash_documents d ON d.key = k.key AND d.id = k.id"
        " WHERE k.key IS NULL OR d.id IS NULL"
    ).fetchone() == (0,)
    # again: nothing more to drop
    again = pg.execute("SELECT action, n_rows FROM simhash_drop_partitions('2 days')").fetchall()
    assert again == [("delete", 0)]
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        pg.execute("SELECT * FROM simhash_drop_partitions('-1 day')")


def test_ensure_moves_waiting_rows_out_of_the_default_partition(pg: psycopg.Connection) -> None:
    today = datetime.now(timezone.utc).date()
    name = f"simhash_documents_p{today.strftime('%Y%m%d')}"
    # a store that missed its ensure: today's partition is gone, rows wait in the default one
    pg.execute(f"DROP TABLE {name}")
    a, b = _insert(pg, [("waiting", 0xF0F0, 0.0), (None, 0xF0F1, 0.0)])
    pg.execute("UPDATE simhash_documents SET duplicate_of = %s WHERE id = %s", [a, b])
    assert pg.execute("SELECT count(*) FROM simhash_documents_default").fetchone() == (2,)
    assert pg.execute("SELECT * FROM simhash_ensure_partitions(1)").fetchall() == [(name,)]
    assert pg.execute("SELECT count(*) FROM simhash_documents_default").fetchone() == (0,)
    assert pg.execute(
        f"SELECT id, key, duplicate_of FROM {name} ORDER BY id"
    ).fetchall() == [(a, "waiting", None), (b, None, a)]
    assert pg.execute("SELECT key, id FROM simhash_keys").fetchall() == [("waiting", a)]
    assert pg.execute("SELECT * FROM simhash_ensure_partitions(1)").fetchall() == []


def test_ensure_is_safe_from_two_sessions_at_once(pg: psycopg.Connection, pg_dsn: str) -> None:
    made: list[list[str]] = [[], []]
    barrier = threading.Barrier(2)

    def worker(n: int) -> None:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            barrier.wait(timeout=30)
            made[n] = [r[0] for r in conn.execute(
                "SELECT * FROM simhash_ensure_partitions(6)"
            ).fetchall()]

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(made[0] + made[1]) == sorted(set(made[0] + made[1]))
    assert len(made[0] + made[1]) == 5  # days 2..6; each made once
    assert len(_partitions(pg)) == 8


def test_store_with_retention_makes_partitions_and_purges_by_dropping(
    pg: psycopg.Connection, pg_dsn: str
) -> None:
    today = datetime.now(timezone.utc).date()
    ahead = f"simhash_documents_p{(today + timedelta(1)).strftime('%Y%m%d')}"
    pg.execute(f"DROP TABLE {ahead}")
    past_day_partitions(pg, 3)
    _insert(pg, [(None, i * 1_000_003, 2.2 + i / 100) for i in range(50)])
    with SimhashStore(pg_dsn, retention=timedelta(days=1)) as store:
        assert ahead in _partitions(pg)  # made on open
        stats = store.stats()
        assert stats["partitions"] == 6 and stats["rows"] == 50
        assert stats["table_bytes"] > 0 and stats["index_bytes"] > 0
        res = store.purge()
        assert res.deleted == 50 and len(res.dropped) == 2 and res.batches == 1
        assert store.count() == 0


# -- roles ---------------------------------------------------------------------------


def test_reader_reads_new_partitions_through_the_parent_and_writes_nothing(
    pg: psycopg.Connection, pg_dsn: str
) -> None:
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    role = f"part_reader_{random.getrandbits(32):x}"
    pg.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'x' IN ROLE simhash_reader").format(
        sql.Identifier(role)))
    try:
        made = pg.execute("SELECT * FROM simhash_ensure_partitions(5)").fetchall()
        assert made
        newest = made[-2][0]  # today + 4
        _insert(pg, [("ahead", 0x77, -4.0)])  # lands in a partition just made
        assert pg.execute(
            "SELECT tableoid::regclass::text FROM simhash_documents WHERE key = 'ahead'"
        ).fetchone() == (newest,)
        params = {k: v for k, v in conninfo_to_dict(pg_dsn).items() if v is not None}
        params |= {"user": role, "password": "x"}
        with psycopg.connect(make_conninfo(**params), autocommit=True) as conn:
            assert conn.execute(
                "SELECT key FROM simhash_documents WHERE key = 'ahead'"
            ).fetchall() == [("ahead",)]
            assert conn.execute("SELECT key FROM simhash_near(119, 3)").fetchall() == [
                ("ahead",)
            ]
            assert conn.execute("SELECT count(*) FROM simhash_keys").fetchone() == (1,)
            assert len(conn.execute("SELECT * FROM simhash_partitions()").fetchall()) >= 4
            for statement in (
                f"SELECT * FROM {newest}",  # partitions themselves: no grant needed, none given
                f"INSERT INTO {newest} (fingerprint, created_at)"
                " SELECT 1, now() + interval '4 days'",
                "INSERT INTO simhash_keys VALUES ('x', 1, now())",
                "DELETE FROM simhash_keys",
                "SELECT simhash_ensure_partitions(9)",
                "SELECT * FROM simhash_drop_partitions('0 s')",
                "SELECT simhash_create_partition('2000-01-01')",
                "SELECT simhash_set_partition_interval('week')",
                f"DROP TABLE {newest}",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(statement)
        for fn in ("simhash_ensure_partitions(integer, text)",
                   "simhash_drop_partitions(interval)", "simhash_create_partition(date, text)",
                   "simhash_set_partition_interval(text, integer)"):
            assert pg.execute(
                "SELECT has_function_privilege('simhash_reader', %s, 'EXECUTE')", [fn]
            ).fetchone() == (False,)
    finally:
        pg.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


# -- bulk_load -------------------------------------------------------------------------


def test_bulk_load_into_todays_partition(pg: psycopg.Connection, pg_dsn: str) -> None:
    rnd = np.random.default_rng(3)
    fps = rnd.integers(0, 2**64, size=30_000, dtype=np.uint64)
    with SimhashStore(pg_dsn) as store:
        timings: dict[str, float] = {}
        assert store.bulk_load(fps, timings=timings) == len(fps)
        assert store.bulk_load.__doc__ and timings["copy"] > 0
        assert {"build pkey", "build b0_idx", "build b3_idx"} <= set(timings)
        where = pg.execute(
            "SELECT tableoid::regclass::text, count(*) FROM simhash_documents GROUP BY 1"
        ).fetchall()
        today = datetime.now(timezone.utc).date().strftime("%Y%m%d")
        assert where == [(f"simhash_documents_p{today}", len(fps))]
        # frozen by COPY FREEZE: all-visible at once
        frozen = pg.execute(
            f"SELECT relallvisible > 0 AND relallvisible = relpages FROM pg_class"
            f" WHERE relname = 'simhash_documents_p{today}'"
        ).fetchone()
        assert frozen == (True,)
        # indexes rebuilt on every partition, parent indexes valid
        assert pg.execute(
            "SELECT bool_and(indisvalid), count(*) FROM pg_index"
            " WHERE indrelid = 'simhash_documents'::regclass"
        ).fetchone() == (True, 9)
        migrate.check(pg_dsn)
        for q in (int(fps[0]), int(fps[123]) ^ 0b101):
            want = sorted((hamming(int(fp), q), i + 1) for i, fp in enumerate(fps)
                          if hamming(int(fp), q) <= 3)
            assert [(m.distance, m.id) for m in store.near(q)] == want
        assert store.add(int(fps[7]) ^ 1).duplicate_of == 8
        # keyed documents too (the text path of bulk_load)
        pg.execute("TRUNCATE simhash_documents")
        assert store.bulk_load([Doc(5, "a"), Doc(6, "b")]) == 2
        assert pg.execute("SELECT key, id FROM simhash_keys ORDER BY key").fetchall() == [
            ("a", 1), ("b", 2)
        ]
