"""Revision 0020: the writer role simhash_writer (issue 29, item 2).

A member of simhash_writer adds, searches, removes and makes the partitions
ahead, and nothing more; simhash_reader still only reads. Roles are the
whole server's: logins come from conftest's ``login_dsn`` and are dropped at
the end; simhash_writer itself outlives a test database's downgrade while
the session's template database still grants it something.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import psycopg
import pytest
from _throwaway import needs_own_server, throwaway_server

from simhash_pg import SimhashStore
from simhash_pg.db import migrate

TEXTS = [
    "The harbour master counted forty ships at anchor before the storm came in.",
    "A quiet village library opened its doors to the travelling chess club on Sunday.",
    "Engineers replaced the old swing bridge with a lifting span over the canal.",
]
COPY = TEXTS[0].replace("forty", "forty-one")
DENIED = psycopg.errors.InsufficientPrivilege


def _partitions_ahead(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT partition::text FROM simhash_partitions()"
        " WHERE NOT is_default AND lower_bound > now() ORDER BY lower_bound")]


def test_writer_is_a_group_role_with_a_readers_rights_and_the_writes(
        pg: psycopg.Connection) -> None:
    row = pg.execute(
        "SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls,"
        " pg_has_role(oid, 'simhash_reader', 'MEMBER'),"
        " pg_has_role('simhash_reader', oid, 'MEMBER')"
        " FROM pg_roles WHERE rolname = 'simhash_writer'").fetchone()
    assert row == (False, False, False, False, False, True, False)
    may = {(rel, what): pg.execute("SELECT has_table_privilege('simhash_writer', %s, %s)",
                                   [rel, what]).fetchone() == (True,)
           for rel in ("simhash_documents", "simhash_meta", "simhash_keys",
                       "simhash_text_keys")
           for what in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")}
    assert {k for k, v in may.items() if v} == {
        ("simhash_documents", "SELECT"), ("simhash_documents", "INSERT"),
        ("simhash_documents", "UPDATE"), ("simhash_documents", "DELETE"),
        ("simhash_meta", "SELECT"), ("simhash_meta", "INSERT"),
        ("simhash_keys", "SELECT"), ("simhash_text_keys", "SELECT")}
    functions = {
        "simhash_add(bigint, text, jsonb, integer, text, text)": (True, True),
        "simhash_ensure_partitions(integer, text)": (True, False),
        "simhash_create_partition(date, text)": (False, False),
        "simhash_drop_partitions(interval)": (False, False),
        "simhash_set_partition_interval(text, integer)": (False, False),
        "simhash_text_keys_follow_partitions()": (False, False),
    }
    for fn, (writer, reader) in functions.items():
        got = pg.execute("SELECT has_function_privilege('simhash_writer', %s, 'EXECUTE'),"
                         " has_function_privilege('simhash_reader', %s, 'EXECUTE')",
                         [fn, fn]).fetchone()
        assert got == (writer, reader), fn
    row = pg.execute("SELECT prosecdef, proconfig = ARRAY['search_path='"
                     " || quote_ident(current_schema()) || ', pg_temp'] FROM pg_proc"
                     " WHERE oid = 'simhash_ensure_partitions(integer, text)'::regprocedure"
                     ).fetchone()
    assert row == (True, True)  # SECURITY DEFINER, the search path pinned


def test_a_writer_makes_the_partitions_ahead_within_the_stores_layout(
        login_dsn: Callable[[str], str], pg: psycopg.Connection) -> None:
    owner = pg.execute("SELECT relowner::regrole::text FROM pg_class"
                       " WHERE oid = 'simhash_documents'::regclass").fetchone()
    with psycopg.connect(login_dsn("simhash_writer"), autocommit=True) as conn:
        made = [r[0] for r in conn.execute("SELECT simhash_ensure_partitions(3)")]
        assert len(made) == 2, made  # today's and tomorrow's were there
        owners = {r[0] for r in pg.execute(
            "SELECT relowner::regrole::text FROM pg_class WHERE relname = ANY (%s)", [made])}
        assert owners == {owner[0] if owner else None}  # the owner's tables, as before
        for call in ("SELECT simhash_ensure_partitions(8)",  # past 7 days ahead
                     "SELECT simhash_ensure_partitions(1, 'month')",  # another layout
                     "SELECT simhash_create_partition(current_date + 30)",
                     "SELECT * FROM simhash_drop_partitions('1 day')",
                     "SELECT simhash_set_partition_interval('week')",
                     "SELECT pg_advisory_xact_lock(1397246981, 0)",  # the maintenance lock
                     "TRUNCATE simhash_documents",
                     "UPDATE simhash_meta SET value = '\"x\"' WHERE name = 'scheme'",
                     "INSERT INTO simhash_keys (key, id, created_at) VALUES ('k', 1, now())"):
            with pytest.raises(DENIED):
                conn.execute(call)
    assert len(_partitions_ahead(pg)) == 3


def test_a_writers_store_with_retention_makes_tomorrows_partition(
        login_dsn: Callable[[str], str], pg: psycopg.Connection, pg_dsn: str) -> None:
    SimhashStore(pg_dsn).close()  # the owner opened it once
    ahead = _partitions_ahead(pg)
    assert ahead, "no partition ahead"
    pg.execute(f"DROP TABLE {ahead[0]}")
    pg.execute("SELECT simhash_text_keys_follow_partitions()")
    writer = login_dsn("simhash_writer")
    with SimhashStore(writer, retention=timedelta(days=2)) as store:
        assert _partitions_ahead(pg) == ahead[:1]  # before 0020: permission denied, ignored
        a = store.add(TEXTS[0], key="a")
        assert a.inserted and store.add(COPY, key="b").duplicate_of == a.id
        assert [m.key for m in store.near(COPY)] == ["a"]
        store.purge(older_than="1d")  # the writer's purge: partitions ahead, batched deletes
        assert store.remove("a") and store.count() == 0


def test_a_reader_cannot_write_nor_make_partitions(
        login_dsn: Callable[[str], str], pg: psycopg.Connection) -> None:
    with psycopg.connect(login_dsn("simhash_reader"), autocommit=True) as conn:
        for call in ("SELECT simhash_ensure_partitions(1)",
                     "SELECT * FROM simhash_add(1, 'by-the-reader')",
                     "INSERT INTO simhash_documents (fingerprint) VALUES (1)",
                     "INSERT INTO simhash_meta (name, value) VALUES ('x', '1')"):
            with pytest.raises(DENIED):
                conn.execute(call)
        assert conn.execute("SELECT count(*) FROM simhash_partitions()").fetchone() != (0,)


def _grants_to_writer(pg: psycopg.Connection) -> list[str]:
    """This database's grants to simhash_writer: tables, the sequence, functions."""
    return [r[0] for r in pg.execute(
        "SELECT c.relname || ' ' || a.privilege_type FROM pg_class c,"
        " aclexplode(c.relacl) a WHERE a.grantee = 'simhash_writer'::regrole"
        " UNION ALL SELECT p.oid::regprocedure::text FROM pg_proc p,"
        " aclexplode(p.proacl) a WHERE a.grantee = 'simhash_writer'::regrole ORDER BY 1")]


def test_migration_0020_round_trip_keeps_the_rows(
        login_dsn: Callable[[str], str], pg: psycopg.Connection, pg_dsn: str) -> None:
    writer = login_dsn("simhash_writer")
    with SimhashStore(writer) as store:  # a writer opens a store first: it records the scheme
        ids = [store.add(t, key=f"k{i}").id for i, t in enumerate(TEXTS)]
        found = [(m.id, m.distance) for m in store.near(COPY)]
    assert found and found[0][0] == ids[0]
    assert len(_grants_to_writer(pg)) == 8
    losses = migrate.downgrade_losses_between("0020", "0019")
    assert [r for r, what in losses if "simhash_writer" in what] == ["0020"]

    migrate.downgrade(pg_dsn, "0019")
    assert _grants_to_writer(pg) == []
    row = pg.execute("SELECT prosecdef, proconfig FROM pg_proc"
                     " WHERE oid = 'simhash_ensure_partitions(integer, text)'::regprocedure"
                     ).fetchone()
    assert row == (False, None)
    # kept: the session's template database still grants it (the last one out drops it)
    assert pg.execute("SELECT count(*) FROM pg_roles WHERE rolname = 'simhash_writer'"
                      ).fetchone() == (1,)
    with psycopg.connect(writer, autocommit=True) as conn, pytest.raises(DENIED):
        conn.execute("INSERT INTO simhash_documents (fingerprint) VALUES (1)")
    assert pg.execute("SELECT id, key FROM simhash_documents ORDER BY id").fetchall() \
        == [(i, f"k{n}") for n, i in enumerate(ids)]

    migrate.upgrade(pg_dsn)
    migrate.check(pg_dsn)
    assert len(_grants_to_writer(pg)) == 8
    with SimhashStore(writer) as store:  # the same login writes again
        assert [(m.id, m.distance) for m in store.near(COPY)] == found
        assert store.add(TEXTS[1] + " And more.", key="k9").duplicate_of == ids[1]
        assert store.add("An entirely different sentence about winter gardens.",
                         key="k10").inserted
        assert store.count() == 4


@pytest.mark.slow  # its own server: initdb and the migrations, twice
@needs_own_server
def test_the_last_store_downgraded_drops_the_writer_role() -> None:
    def exists(admin: psycopg.Connection, role: str) -> bool:
        row = admin.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", [role])
        return row.fetchone() == (1,)

    with throwaway_server() as server:
        server.start(dbname="a")
        server.start(dbname="b")
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as admin:
            migrate.upgrade(server.dsn("a"))
            migrate.upgrade(server.dsn("b"))
            admin.execute("CREATE ROLE crawler LOGIN IN ROLE simhash_writer")
            migrate.downgrade(server.dsn("a"), "0019")
            assert exists(admin, "simhash_writer")  # b still grants it its table
            migrate.downgrade(server.dsn("b"), "0019")
            assert not exists(admin, "simhash_writer")  # the last one out dropped it
            assert exists(admin, "crawler")  # its member stays, a member of nothing
            assert admin.execute("SELECT count(*) FROM pg_auth_members m JOIN pg_roles r"
                                 " ON r.oid = m.member WHERE r.rolname = 'crawler'"
                                 ).fetchone() == (0,)
            migrate.upgrade(server.dsn("a"))  # made again
            assert exists(admin, "simhash_writer")
            migrate.downgrade(server.dsn("a"), "0019")
            admin.execute("CREATE ROLE simhash_writer NOLOGIN")  # the operator's own
            migrate.upgrade(server.dsn("a"))
            migrate.downgrade(server.dsn("a"), "0019")
            assert exists(admin, "simhash_writer")  # not ours: kept
