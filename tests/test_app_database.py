"""A database that already holds an application's tables and its own alembic history.

simhash-pg keeps its revision in ``alembic_version`` too (issue 31 will give it
a table of its own). Until then: beside an app's tables it says what it creates
and touches nothing of theirs; beside an app's alembic history it refuses, with
a message that names the history, and changes nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import psycopg
import pytest
from click.testing import CliRunner, Result
from psycopg.conninfo import make_conninfo
from psycopg.sql import SQL, Identifier

from simhash_pg.cli.main import cli
from simhash_pg.db import migrate
from simhash_pg.store import SchemaVersionError, SimhashStore

APP_DB = "app_with_history"


def invoke(dsn: str, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"SIMHASH_PG_DSN": dsn},
                              catch_exceptions=False)


def snapshot(dsn: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]], list[str]]:
    """The app's rows, its alembic_version rows (if any), and every table's name."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT name FROM mine ORDER BY name").fetchall()
        history = conn.execute("SELECT to_regclass('alembic_version') IS NOT NULL").fetchone()
        versions = (conn.execute("SELECT version_num FROM alembic_version").fetchall()
                    if history == (True,) else [])
        tables = [r[0] for r in conn.execute(
            "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') "
            "AND relnamespace = 'public'::regnamespace ORDER BY relname").fetchall()]
    return rows, versions, tables


@pytest.fixture
def app_db(pg_dsn: str) -> Iterator[Callable[[bool], str]]:
    """app_db(history) -> the DSN of a new database with the app's table ``mine`` and,
    with ``history``, its own alembic_version at revision a1b2c3d4."""
    def make(history: bool) -> str:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(SQL("CREATE DATABASE {}").format(Identifier(APP_DB)))
        dsn = make_conninfo(pg_dsn, dbname=APP_DB)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE mine (name text PRIMARY KEY)")
            conn.execute("INSERT INTO mine VALUES ('kept'), ('also kept')")
            if history:
                conn.execute("CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY)")
                conn.execute("INSERT INTO alembic_version VALUES ('a1b2c3d4')")
        return dsn

    yield make
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(Identifier(APP_DB)))


def test_an_app_history_is_never_read_as_ours_nor_touched(app_db: Callable[[bool], str]
                                                           ) -> None:
    dsn = app_db(True)
    before = snapshot(dsn)
    for args in (["add", "a text of the app's users, with words enough"],
                 ["near", "a text of the app's users"], ["db", "current"], ["db", "upgrade"]):
        res = invoke(dsn, *args)
        assert res.exit_code != 0, (args, res.output)
        assert "another alembic history" in res.stderr and "'a1b2c3d4'" in res.stderr, args
        assert "Traceback" not in res.output + res.stderr
    with pytest.raises(SchemaVersionError, match="another alembic history"):
        SimhashStore(dsn)  # even with migrate=True
    with pytest.raises(migrate.ForeignHistoryError):
        migrate.upgrade(dsn)
    assert snapshot(dsn) == before  # not a row, not a table more


def test_a_store_beside_an_apps_tables_says_so(app_db: Callable[[bool], str]) -> None:
    dsn = app_db(False)
    before = snapshot(dsn)
    res = invoke(dsn, "add", "a text of the app's users, with words enough to keep")
    assert res.exit_code == 0, res.stderr
    assert ("holds no simhash-pg store: creating its tables beside the 1 table already "
            "there (ours are named simhash_*; theirs are not touched)") in res.stderr
    rows, _, tables = snapshot(dsn)
    assert rows == before[0] and "mine" in tables
    assert all(t == "mine" or t.startswith("simhash_") or t == "alembic_version"
               for t in tables), tables


def test_our_revisions_are_told_apart_from_an_apps() -> None:
    assert migrate.foreign_history(None) is None
    assert migrate.foreign_history(migrate.HEAD) is None
    assert migrate.foreign_history("0099") is None  # a newer simhash-pg's
    assert "'a1b2c3d4'" in (migrate.foreign_history("a1b2c3d4") or "")
