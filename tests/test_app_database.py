"""A database that already holds an application's tables and its own alembic history.

The store lives in its own schema with its own version table (revision 0022):
beside an app's tables and history every front door works, nothing of ours
is in public, and the app's alembic_version is never read or written. An
app's own alembic environment can run our migrations too
(examples/app_alembic/).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from _serving import make_client
from click.testing import CliRunner, Result
from psycopg.conninfo import make_conninfo
from psycopg.sql import SQL, Identifier

from simhash_pg.cli.main import cli
from simhash_pg.db import migrate
from simhash_pg.store import SimhashStore

APP_DB = "app_with_history"
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "app_alembic"
TEXT = "a text of the app's users, with words enough to be a document of its own"


def invoke(dsn: str, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"SIMHASH_PG_DSN": dsn},
                              catch_exceptions=False)


def public(dsn: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]], list[str]]:
    """The app's rows, its alembic_version rows (if any), and every relation and
    function in public."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT name FROM mine ORDER BY name").fetchall()
        history = conn.execute(
            "SELECT to_regclass('public.alembic_version') IS NOT NULL").fetchone()
        versions = (conn.execute("SELECT version_num FROM public.alembic_version").fetchall()
                    if history == (True,) else [])
        names = [r[0] for r in conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace"
            " UNION ALL SELECT proname FROM pg_proc"
            " WHERE pronamespace = 'public'::regnamespace ORDER BY 1").fetchall()]
    return rows, versions, names


@pytest.fixture
def app_db(pg_dsn: str) -> Iterator[Callable[[bool], str]]:
    """app_db(history) -> the DSN of a new database with the app's table ``mine`` and,
    with ``history``, its own alembic_version at revision a1b2c3d4. Its search_path
    is PostgreSQL's default: the store's sessions must set their own."""
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


def test_every_front_door_works_beside_an_apps_history(app_db: Callable[[bool], str],
                                                        tmp_path: Path) -> None:
    dsn = app_db(True)
    before = public(dsn)
    posts = tmp_path / "posts.txt"
    posts.write_text(f"{TEXT}\n{TEXT} again\nsomething else entirely, about other things\n")
    res = invoke(dsn, "dedup", str(posts), "--out", str(tmp_path / "kept.jsonl"))
    assert res.exit_code == 0, res.output + res.stderr
    assert len((tmp_path / "kept.jsonl").read_text().splitlines()) == 2
    res = invoke(dsn, "db", "upgrade")
    assert res.exit_code == 0, res.output + res.stderr
    res = invoke(dsn, "db", "current")
    assert res.exit_code == 0 and migrate.HEAD in res.output, res.output + res.stderr
    assert invoke(dsn, "add", TEXT).exit_code == 0
    res = invoke(dsn, "near", TEXT)
    assert res.exit_code == 0 and "distance" in res.output.lower() + res.stderr.lower(), res.output
    with SimhashStore(dsn, migrate=False) as store:
        assert store.schema == "simhash"
        assert store.near(TEXT)
        added = store.add_many([("another text of the app's users, all new", "b")])
        assert added.inserted == 1, added
        assert len(store.near_many([TEXT, "nothing like it at all, no"])[0]) >= 1
    with make_client(dsn) as client:
        got = client.post("/v1/near", json={"text": TEXT})
        assert got.status_code == 200 and got.json()["matches"], got.text
    assert public(dsn) == before  # the app's rows and history; nothing of ours in public
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version_num FROM simhash.alembic_version").fetchall() == [
            (migrate.HEAD,)]


def test_a_store_beside_an_apps_tables_says_so(app_db: Callable[[bool], str]) -> None:
    dsn = app_db(False)
    before = public(dsn)
    res = invoke(dsn, "add", TEXT)
    assert res.exit_code == 0, res.stderr
    assert ("holds no simhash-pg store: creating one in the schema simhash, beside the "
            "1 table already in the database (not touched)") in res.stderr
    assert public(dsn) == before


def test_the_apps_alembic_runs_our_migrations_beside_its_own(
        app_db: Callable[[bool], str]) -> None:
    from alembic import command
    from alembic.config import Config

    dsn = app_db(False)
    cfg = Config()
    cfg.set_main_option("script_location", str(EXAMPLE))
    cfg.cmd_opts = None
    url = migrate.sqlalchemy_url(dsn)

    def app(*args: str) -> None:
        cfg.cmd_opts = type("Opts", (), {"x": [f"url={url}"]})()
        getattr(command, args[0])(cfg, *args[1:])

    app("upgrade", "head")
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version_num FROM public.alembic_version").fetchall() == [
            ("b2c3d4e5f6a7",)]
        assert conn.execute("SELECT version_num FROM simhash.alembic_version").fetchall() == [
            (migrate.HEAD,)]
        assert conn.execute("SELECT count(*) FROM posts WHERE title IS NULL").fetchone() == (0,)
    with SimhashStore(dsn, migrate=False) as store:
        store.add(TEXT, key="one")
    app("downgrade", "-1")
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT version_num FROM public.alembic_version").fetchall() == [
            ("a1b2c3d4e5f6",)]
        cols = [r[0] for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'public.posts'::regclass"
            " AND attnum > 0 AND NOT attisdropped")]
        assert "title" not in cols
        assert conn.execute("SELECT key FROM simhash.simhash_documents").fetchall() == [("one",)]
    app("upgrade", "head")
    with SimhashStore(dsn, migrate=False) as store:
        assert store.get("one") is not None
