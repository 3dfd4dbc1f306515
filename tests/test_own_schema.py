"""The store in a schema of its own (revision 0022), in a database whose
search_path is PostgreSQL's default: nothing of ours in public, every function
usable schema-qualified from any search_path, and a store made before 0022
moved into the schema and back with every row equal."""

from __future__ import annotations

import re
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.sql import SQL, Identifier

from simhash_pg.db import layout, migrate
from simhash_pg.db.resources import read_sql
from simhash_pg.store import SimhashStore

DB = "own_schema"
TEXTS = [f"document {i} of the move, about {w} and what follows from it in the end"
         for i, w in enumerate(["rivers", "bridges", "engines", "harbours", "gardens"])]


@pytest.fixture
def bare_dsn(pg_dsn: str) -> Iterator[str]:
    """A new, empty database with PostgreSQL's default search_path."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(SQL("CREATE DATABASE {}").format(Identifier(DB)))
    yield make_conninfo(pg_dsn, dbname=DB)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(Identifier(DB)))


def ours(conn: psycopg.Connection, schema: str) -> list[str]:
    return [r[0] for r in conn.execute(
        r"SELECT relname FROM pg_class WHERE relnamespace = to_regnamespace(%s)"
        r" AND relname LIKE 'simhash\_%%' UNION ALL SELECT proname FROM pg_proc"
        r" WHERE pronamespace = to_regnamespace(%s) AND proname LIKE 'simhash\_%%' ORDER BY 1",
        [schema, schema]).fetchall()]


def rows(conn: psycopg.Connection, schema: str, columns: list[str] | None = None
         ) -> tuple[list[str], list[tuple[object, ...]]]:
    cols = columns or [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
        " AND NOT attisdropped ORDER BY attnum", [f"{schema}.simhash_documents"])]
    got = conn.execute(SQL("SELECT {} FROM {}.simhash_documents ORDER BY id").format(
        SQL(", ").join(map(Identifier, cols)), Identifier(schema))).fetchall()
    return cols, got


def test_nothing_of_ours_in_public_and_functions_work_from_any_search_path(
        bare_dsn: str) -> None:
    with SimhashStore(bare_dsn) as store:
        for i, text in enumerate(TEXTS):
            store.add(text, key=f"k{i}")
    with psycopg.connect(bare_dsn, autocommit=True) as conn:
        assert conn.execute("SHOW search_path").fetchone() == ('"$user", public',)
        assert ours(conn, "public") == []
        assert "simhash_documents" in ours(conn, "simhash")
        assert conn.execute("SELECT to_regclass('public.alembic_version')").fetchone() == (None,)
        fp = conn.execute("SELECT fingerprint FROM simhash.simhash_documents"
                          " WHERE key = 'k0'").fetchone()
        assert fp is not None
        near = conn.execute("SELECT key FROM simhash.simhash_near(%s, 3)", [fp[0]]).fetchall()
        assert ("k0",) in near
        conn.execute("SELECT * FROM simhash.simhash_near_id(1, 3)").fetchall()
        conn.execute("SELECT * FROM simhash.simhash_partitions()").fetchall()
        assert conn.execute("SELECT simhash.simhash_hamming(0, 7)").fetchone() == (3,)


def test_functions_are_pinned_but_the_inlined_helpers() -> None:
    listed = re.search(r"NOT IN \((.*?)\)", read_sql("0022_own_schema.sql"), re.S)
    assert listed is not None
    assert set(re.findall(r"'(\w+)'", listed.group(1))) == set(layout.INLINED)


def test_every_function_is_pinned_or_inlined(pg: psycopg.Connection) -> None:
    unpinned = {r[0] for r in pg.execute(
        r"SELECT p.proname FROM pg_proc p WHERE p.pronamespace = 'simhash'::regnamespace"
        r" AND p.proname LIKE 'simhash\_%' AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig)"
        r" AS c WHERE c LIKE 'search_path=%')")}
    assert unpinned - {"simhash_near_probes_candidates"} == set(layout.INLINED)


def test_a_store_made_before_0022_moves_in_and_back_with_every_row(bare_dsn: str) -> None:
    with SimhashStore(bare_dsn) as store:
        for i, text in enumerate(TEXTS):
            store.add(text, key=f"k{i}", meta={"i": i})
        store.add(TEXTS[0] + " again", key="dup")
    migrate.downgrade(bare_dsn, "0016")  # the layout simhash-pg 0016 made: all in public
    with psycopg.connect(bare_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT version_num FROM public.alembic_version").fetchall() == [
            ("0016",)]
        assert conn.execute("SELECT to_regnamespace('simhash')").fetchone() == (None,)
        assert "simhash_documents" in ours(conn, "public")
        cols, at_0016 = rows(conn, "public")
        conn.execute("INSERT INTO public.alembic_version VALUES ('a1b2c3d4')")  # an app's
    assert len(at_0016) == 5  # "dup" was not stored
    migrate.upgrade(bare_dsn)
    with psycopg.connect(bare_dsn, autocommit=True) as conn:
        assert ours(conn, "public") == []
        assert rows(conn, "simhash", cols) == (cols, at_0016)
        assert conn.execute("SELECT version_num FROM public.alembic_version").fetchall() == [
            ("a1b2c3d4",)]  # the app's row, untouched; ours moved
        conn.execute("DELETE FROM public.alembic_version")
    with SimhashStore(bare_dsn, migrate=False) as store:
        assert store.get("k3") is not None and store.near(TEXTS[1])
    migrate.downgrade(bare_dsn, "0016")
    with psycopg.connect(bare_dsn, autocommit=True) as conn:
        assert rows(conn, "public") == (cols, at_0016)
        assert conn.execute("SELECT version_num FROM public.alembic_version").fetchall() == [
            ("0016",)]


def test_a_schema_of_the_users_choice(bare_dsn: str) -> None:
    with SimhashStore(bare_dsn, schema="dedup") as store:
        store.add(TEXTS[0], key="one")
        assert store.schema == "dedup"
    with psycopg.connect(bare_dsn, autocommit=True) as conn:
        assert ours(conn, "public") == [] and ours(conn, "simhash") == []
        assert conn.execute("SELECT key FROM dedup.simhash_documents").fetchall() == [("one",)]
    assert migrate.current(bare_dsn, schema="dedup") == migrate.HEAD
    assert migrate.current(bare_dsn) is None
    for bad in ("public", "Dedup", "pg_x", "a-b", ""):
        with pytest.raises(ValueError, match="schema must be a plain lower-case name"):
            layout.schema_name(bad)


def test_psql_finds_the_store_by_short_names(bare_dsn: str) -> None:
    import subprocess
    import sys

    with SimhashStore(bare_dsn) as store:
        store.add(TEXTS[0], key="one")
    out = subprocess.run(
        [sys.executable, "-m", "simhash_pg.cli", "psql", "--dsn", bare_dsn, "--",
         "-tAc", "SELECT key FROM simhash_documents; SELECT count(*) FROM simhash_near(0, 64)"],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["one", "1"]
