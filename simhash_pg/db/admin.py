"""Database chores the CLI and ``serve`` ask for, each over a connection of its own.

- :func:`is_empty_database`: nobody has made a store in it yet;
- :func:`drop_database` and :func:`replace_database`: a fresh database for
  a command that owns one (``demo``, ``eval``), never a user's store;
- :func:`alter_system`: settings written to the server's postgresql.auto.conf;
- :func:`memory_status_at`: :func:`~simhash_pg.db.server_settings.memory_status`
  of a server by its DSN;
- :func:`logged_in_as`: the role a DSN logs in as, tried again a while.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from simhash_pg.db import layout
from simhash_pg.db.migrate import libpq_dsn
from simhash_pg.db.server_settings import memory_status

__all__ = [
    "ForeignDataError",
    "alter_system",
    "current_setting",
    "drop_database",
    "is_empty_database",
    "logged_in_as",
    "memory_status_at",
    "other_tables",
    "replace_database",
]


class ForeignDataError(RuntimeError):
    """A database to replace holds documents that are not the replacing command's."""


def is_empty_database(dsn: str, schema: str | None = None) -> bool:
    """No store in it: no revision of ours and no table of ours, in the store's
    schema or (a store made before revision 0022) in public. An app's tables
    and its own alembic history do not count."""
    schema = layout.schema_name(schema)
    with psycopg.connect(libpq_dsn(dsn), autocommit=True, connect_timeout=10) as conn:
        return (layout.stored_revision(conn, schema) is None
                and _documents_table(conn, schema) is None)


def _documents_table(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """Where the store's documents are (its schema, else public), None: nowhere."""
    row = conn.execute(
        "SELECT coalesce(to_regclass(%s), to_regclass('public.simhash_documents'))::text",
        [f"{schema}.simhash_documents"]).fetchone()
    return row[0] if row else None


def other_tables(dsn: str) -> int:
    """How many tables the database holds outside the system schemas (an app's, say)."""
    with psycopg.connect(libpq_dsn(dsn), autocommit=True, connect_timeout=10) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition"
            " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
            " AND n.nspname NOT LIKE 'pg\\_%'").fetchone()
    return int(row[0]) if row else 0


def drop_database(admin_dsn: str, dbname: str) -> None:
    """Drop ``dbname`` if it exists, its sessions ended (FORCE), over ``admin_dsn``."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                     .format(sql.Identifier(dbname)))


def replace_database(dsn: str, dbname: str, *, own_keys: str) -> str:
    """The DSN of a new, empty ``dbname`` on the server ``dsn`` names (never ``dsn`` itself).

    An existing ``dbname`` is dropped first only if its documents' keys all
    start with ``own_keys``; else :class:`ForeignDataError`. psycopg.Error:
    the server refused.
    """
    target = make_conninfo(libpq_dsn(dsn), dbname=dbname)
    with psycopg.connect(libpq_dsn(dsn), autocommit=True, connect_timeout=10) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                         [dbname]).fetchone():
            with psycopg.connect(target, autocommit=True) as conn:
                table = _documents_table(conn, layout.schema_name())
                foreign = table is not None and conn.execute(
                    sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE key NOT LIKE %s)")
                    .format(sql.SQL(table)),
                    [own_keys.replace("%", r"\%").replace("_", r"\_") + "%"]).fetchone()
            if foreign and foreign[0]:
                raise ForeignDataError(dbname)
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(dbname)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        # the store's own database: short names for psql, as on the embedded server's
        admin.execute(sql.SQL("ALTER DATABASE {} SET search_path TO {}").format(
            sql.Identifier(dbname), sql.SQL(layout.search_path(layout.schema_name()))))
    return target


def alter_system(admin_dsn: str, settings: Mapping[str, str | Sequence[str]]) -> None:
    """``ALTER SYSTEM SET`` each of ``settings`` (applied when the server reloads or restarts).

    A list setting (``shared_preload_libraries``) takes a sequence: one literal
    per element, since a single string would be stored as one element.
    """
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        for name, value in settings.items():
            values = [value] if isinstance(value, str) else list(value)
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                sql.Identifier(name), sql.SQL(", ").join(map(sql.Literal, values))))


def current_setting(admin_dsn: str, name: str) -> str:
    """The server's value of setting ``name``, as SHOW gives it."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT current_setting(%s)", [name]).fetchone()
    assert row is not None
    return str(row[0])


def memory_status_at(admin_dsn: str) -> str:
    """:func:`~simhash_pg.db.server_settings.memory_status` of the server ``admin_dsn`` names."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        return memory_status(conn)


def logged_in_as(dsn: str, wait: float = 5.0) -> str | None:
    """The role a login with ``dsn`` gets (``current_user``).

    Tried again for up to ``wait`` seconds while the server refuses it (a
    server whose pg_hba.conf was just rewritten reloads it a moment after
    being told to); then its psycopg.OperationalError.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
            break
        except psycopg.OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
    with conn:
        row = conn.execute("SELECT current_user::text").fetchone()
    return row[0] if row is not None else None
