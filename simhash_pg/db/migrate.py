"""Run the alembic migrations from Python (the store, the CLI, the tests).

The alembic environment ships with the package (``resources.migrations_dir``),
so an installed user needs no alembic.ini of their own.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

from simhash_pg.db import layout

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.engine import Connection

__all__ = [
    "HEAD",
    "check",
    "current",
    "downgrade",
    "downgrade_losses",
    "downgrade_losses_between",
    "libpq_dsn",
    "sqlalchemy_url",
    "upgrade",
    "upgrade_within",
]

# The newest revision; the store compares it with alembic_version on open
# without loading alembic (a test keeps it equal to the script head).
HEAD = "0026"

# pg_advisory_xact_lock key: concurrent upgrades (several processes opening a
# new store at once) run one after the other, the later ones as no-ops.
_MIGRATION_LOCK = 0x53484D47  # "SHMG"


def sqlalchemy_url(dsn: str) -> str:
    """A libpq DSN (URI or key=value) -> an SQLAlchemy URL with the psycopg 3 driver."""
    dsn = dsn.strip()
    for prefix in ("postgresql://", "postgres://"):
        if dsn.startswith(prefix):
            return "postgresql+psycopg://" + dsn[len(prefix) :]
    if dsn.startswith("postgresql+"):
        return dsn
    # key=value form
    from urllib.parse import quote, urlencode

    import psycopg.conninfo

    params = psycopg.conninfo.conninfo_to_dict(dsn)
    dbname = str(params.pop("dbname", "") or "")
    query = urlencode({k: str(v) for k, v in params.items()})
    return f"postgresql+psycopg:///{quote(dbname, safe='')}" + (f"?{query}" if query else "")


def libpq_dsn(url: str) -> str:
    """An SQLAlchemy URL -> a libpq URI that psql and psycopg accept."""
    if url.startswith("postgresql+") or url.startswith("postgres+"):
        return "postgresql://" + url.split("://", 1)[1]
    return url


def _config(stdout: TextIO | None = None, schema: str | None = None) -> Config:
    from alembic.config import Config

    from simhash_pg.db.resources import migrations_dir

    cfg = Config(stdout=stdout or io.StringIO())
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["simhash_schema"] = layout.schema_name(schema)
    return cfg


@contextmanager
def _connected(dsn: str, *, lock: bool = True,
               schema: str | None = None) -> Iterator[tuple[Config, Connection]]:
    from sqlalchemy import create_engine, pool

    engine = create_engine(sqlalchemy_url(dsn), poolclass=pool.NullPool)
    try:
        with engine.begin() as conn:
            if lock:
                _lock(conn)
            cfg = _config(schema=schema)
            cfg.attributes["connection"] = conn
            yield cfg, conn
    finally:
        engine.dispose()


def _lock(conn: Connection) -> None:
    """Wait for any other upgrade of this database; held until the transaction ends."""
    from sqlalchemy import text

    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})


def upgrade(dsn: str, revision: str = "head", *, schema: str | None = None) -> None:
    """Upgrade the store in ``dsn`` (its schema: ``schema``, see :mod:`simhash_pg.db.layout`)."""
    from alembic import command

    with _connected(dsn, schema=schema) as (cfg, _):
        command.upgrade(cfg, revision)


def downgrade(dsn: str, revision: str = "base", *, schema: str | None = None) -> None:
    from alembic import command

    with _connected(dsn, schema=schema) as (cfg, _):
        command.downgrade(cfg, revision)


def upgrade_within(connection: Connection, revision: str = "head", *,
                   schema: str | None = None) -> None:
    """Run our migrations on an application's alembic connection (its ``env.py``).

    After the app's own ``context.run_migrations()``, on the same connection
    and in the same transaction: the store's revisions, with their own version
    table in the store's schema; the app's ``alembic_version`` is neither read
    nor written (docs/app.md, "Alembic beside yours").
    """
    from alembic import command, context, op

    _lock(connection)
    cfg = _config(schema=schema)
    cfg.attributes["connection"] = connection
    # alembic keeps the running environment in module-level proxies, and a
    # nested run removes them when it ends: the app's env.py still needs its own
    outer = [getattr(module, "_proxy", None) for module in (context, op)]
    try:
        command.upgrade(cfg, revision)
    finally:
        for proxy in outer:
            if proxy is not None:
                proxy._install_proxy()


def downgrade_losses(dsn: str, revision: str = "base") -> list[tuple[str, str]]:
    """What downgrading the database to ``revision`` destroys: (revision, description) per step.

    Each revision file declares it (``downgrade_drops``); empty when nothing
    is lost that a re-upgrade does not rebuild. :func:`downgrade` itself does
    not ask: ``simhash-pg db downgrade`` does, from this list.
    """
    return downgrade_losses_between(current(dsn), revision)


def downgrade_losses_between(upper: str | None, lower: str) -> list[tuple[str, str]]:
    """As :func:`downgrade_losses`, from revision ``upper`` (None: an empty database).

    An unknown or unreachable ``lower`` raises alembic's error rather than
    answering "nothing": the caller must not downgrade without knowing.
    """
    from alembic.script import ScriptDirectory

    if upper is None:
        return []
    script = ScriptDirectory.from_config(_config())
    steps = script.iterate_revisions(upper, lower, select_for_downgrade=True)
    return [(s.revision, s.module.downgrade_drops) for s in steps
            if getattr(s.module, "downgrade_drops", None)]


def current(dsn: str, *, schema: str | None = None) -> str | None:
    """The store's revision, None for a database without a store (an app's
    alembic history is not read: :func:`simhash_pg.db.layout.stored_revision`)."""
    with _connected(dsn, lock=False, schema=schema) as (cfg, conn):
        driver = conn.connection.driver_connection
        assert driver is not None
        return layout.stored_revision(driver, cfg.attributes["simhash_schema"])


def script_head() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config()).get_current_head()


def check(dsn: str, *, schema: str | None = None) -> None:
    """Raise alembic's AutogenerateDiffsDetected if the models and database differ."""
    from alembic import command

    with _connected(dsn, lock=False, schema=schema) as (cfg, _):
        command.check(cfg)
