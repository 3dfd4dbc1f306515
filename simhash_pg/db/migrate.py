"""Run the alembic migrations from Python (the store, the CLI, the tests).

The alembic environment ships with the package (``resources.migrations_dir``),
so an installed user needs no alembic.ini of their own.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.engine import Connection

__all__ = [
    "HEAD",
    "ForeignHistoryError",
    "check",
    "current",
    "downgrade",
    "downgrade_losses",
    "downgrade_losses_between",
    "foreign_history",
    "libpq_dsn",
    "sqlalchemy_url",
    "upgrade",
]

# The newest revision; the store compares it with alembic_version on open
# without loading alembic (a test keeps it equal to the script head).
HEAD = "0022"

# Our revision ids: four digits ("0001" ... HEAD, and a newer simhash-pg's).
# alembic's own ids, which an application's history has, are 12 hex digits.
_OUR_REVISION = re.compile(r"[0-9]{4}")


class ForeignHistoryError(RuntimeError):
    """The database's ``alembic_version`` holds another alembic history's revision."""


def foreign_history(revision: str | None) -> str | None:
    """What is wrong when ``revision`` (read from ``alembic_version``) is not ours, else None.

    simhash-pg keeps its revision in ``alembic_version`` too, so a database
    whose application already keeps its own history there cannot hold a store
    yet: nothing of the application's is read as ours or touched.
    """
    if revision is None or _OUR_REVISION.fullmatch(revision):
        return None
    return (f"the database keeps another alembic history: its alembic_version "
            f"holds revision {revision!r}, which is not a simhash-pg revision (those are "
            "four digits). simhash-pg records its own revision in that table too, so it "
            "leaves this database alone: give the store a database of its own "
            "(e.g. createdb appdb_simhash)")


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


def _config(stdout: TextIO | None = None) -> Config:
    from alembic.config import Config

    from simhash_pg.db.resources import migrations_dir

    cfg = Config(stdout=stdout or io.StringIO())
    cfg.set_main_option("script_location", str(migrations_dir()))
    return cfg


@contextmanager
def _connected(dsn: str, *, lock: bool = True) -> Iterator[tuple[Any, Any]]:
    from sqlalchemy import create_engine, pool, text

    engine = create_engine(sqlalchemy_url(dsn), poolclass=pool.NullPool)
    try:
        with engine.begin() as conn:
            if lock:
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
            _refuse_foreign_history(conn)
            cfg = _config()
            cfg.attributes["connection"] = conn
            yield cfg, conn
    finally:
        engine.dispose()


def _refuse_foreign_history(conn: Connection) -> None:
    from sqlalchemy import text

    if conn.execute(text("SELECT to_regclass('alembic_version') IS NOT NULL")).scalar():
        for (rev,) in conn.execute(text("SELECT version_num FROM alembic_version")):
            problem = foreign_history(rev)
            if problem is not None:
                raise ForeignHistoryError(problem)


def upgrade(dsn: str, revision: str = "head") -> None:
    from alembic import command

    with _connected(dsn) as (cfg, _):
        command.upgrade(cfg, revision)


def downgrade(dsn: str, revision: str = "base") -> None:
    from alembic import command

    with _connected(dsn) as (cfg, _):
        command.downgrade(cfg, revision)


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


def current(dsn: str) -> str | None:
    """The revision the database is at, None for an empty database."""
    from alembic.runtime.migration import MigrationContext

    with _connected(dsn, lock=False) as (_, conn):
        rev: str | None = MigrationContext.configure(conn).get_current_revision()
        return rev


def script_head() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config()).get_current_head()


def check(dsn: str) -> None:
    """Raise alembic's AutogenerateDiffsDetected if the models and database differ."""
    from alembic import command

    with _connected(dsn, lock=False) as (cfg, _):
        command.check(cfg)
