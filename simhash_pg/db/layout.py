"""Where the store's objects live: a PostgreSQL schema of its own (revision 0022).

The tables, functions and alembic version table of a store are in one schema,
``simhash`` unless ``$SIMHASH_PG_SCHEMA`` (or a ``schema=`` argument) names
another, so that an application's database can hold a store beside its own
tables and its own alembic history. Every session the store opens sets
``search_path`` to that schema, then public (:func:`search_path`).

A store made before revision 0022 keeps its objects and its revision in
public. The migration environment (migrations/env.py) calls :func:`prepare`
before it runs revisions and :func:`settle` after:

- :func:`prepare` moves our revision out of ``public.alembic_version`` into
  the schema's own version table (a row that is not ours is never touched),
  and points ``search_path`` where our objects are now: public for an old
  store (revision 0022 moves them), the schema for a new one (created there
  from revision 0001 on);
- :func:`settle` gives the revision back to ``public.alembic_version`` when a
  downgrade below 0022 moved the objects back to public, so that the older
  simhash-pg they are made for finds them as it left them.
"""

from __future__ import annotations

import os
import re
from typing import Any

import psycopg
from psycopg import sql

__all__ = [
    "DEFAULT_SCHEMA",
    "INLINED",
    "objects_in_public",
    "prepare",
    "schema_name",
    "search_path",
    "settle",
    "stored_revision",
    "use_schema",
]

DEFAULT_SCHEMA = "simhash"

# The SQL helpers left unpinned by revision 0022 (sql/0022_own_schema.sql,
# which lists them too): the planner inlines them into their caller's query,
# which a function with its own search_path it cannot.
INLINED = (
    "simhash_hamming", "simhash_block", "simhash_masks", "simhash_probes",
    "simhash_mask_probe_sets", "simhash_probe_sets", "simhash_block_near1",
    "simhash_pair_branch", "simhash_probe_matches", "simhash_sentence_matches",
    "simhash_near_probes", "simhash_use_pairs",
    "simhash_pairs",  # inlined, so that a cursor streams the pairs (store.pairs)
    # and the LANGUAGE sql overloads of simhash_near_probes_candidates
)

# A plain lower-case name: it needs no quoting in SQL, docs or a search_path.
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# Our revision ids: four digits (an application's alembic ids are 12 hex digits).
OUR_REVISION = re.compile(r"[0-9]{4}")


def schema_name(name: str | None = None) -> str:
    """The store's schema: ``name``, else ``$SIMHASH_PG_SCHEMA``, else ``simhash``."""
    value = name if name is not None else (os.environ.get("SIMHASH_PG_SCHEMA") or DEFAULT_SCHEMA)
    if (not isinstance(value, str) or not _NAME.fullmatch(value) or value == "public"
            or value.startswith("pg_") or value == "information_schema"):
        raise ValueError(
            f"schema must be a plain lower-case name (letters, digits, _; not public, "
            f"information_schema or pg_*), got {value!r}")
    return value


def search_path(schema: str) -> str:
    """The search_path of a store's session: its schema, then public (the app's)."""
    return f"{schema}, public"


def use_schema(conn: psycopg.Connection[Any], schema: str, *, local: bool = False) -> None:
    """Point the session's (``local``: the transaction's) search_path at the store."""
    conn.execute("SELECT set_config('search_path', %s, %s)", [search_path(schema), local])


def _exists(conn: psycopg.Connection[Any], name: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [name]).fetchone()
    return bool(row and row[0])


def _version_table(schema: str) -> str:
    return f"{schema}.alembic_version"


def objects_in_public(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Our tables are in public, not in the schema: a store made before revision 0022."""
    return (_exists(conn, "public.simhash_documents")
            and not _exists(conn, f"{schema}.simhash_documents"))


def stored_revision(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """The store's revision: the schema's version table, else (a store made
    before 0022) our row in ``public.alembic_version``; None: no store."""
    if _exists(conn, _version_table(schema)):
        row = conn.execute(sql.SQL("SELECT version_num FROM {}.alembic_version")
                           .format(sql.Identifier(schema))).fetchone()
        if row is not None:
            return str(row[0])
    ours = _ours_in_public(conn)
    return ours[0] if ours else None


def _ours_in_public(conn: psycopg.Connection[Any]) -> list[str]:
    if not _exists(conn, "public.alembic_version"):
        return []
    rows = conn.execute("SELECT version_num FROM public.alembic_version").fetchall()
    return [r[0] for r in rows if OUR_REVISION.fullmatch(r[0])]


def _make_version_table(conn: psycopg.Connection[Any], schema: str, rows: list[str]) -> None:
    # as alembic makes it, and readable by the analysts' role (a store opened
    # by simhash_reader reads its revision)
    ident = sql.Identifier(schema)
    conn.execute(sql.SQL(
        "CREATE TABLE IF NOT EXISTS {}.alembic_version (version_num varchar(32) NOT NULL,"
        " CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))").format(ident))
    for rev in rows:
        conn.execute(sql.SQL("INSERT INTO {}.alembic_version VALUES (%s)").format(ident), [rev])
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'simhash_reader'").fetchone():
        conn.execute(sql.SQL("GRANT SELECT ON {}.alembic_version TO simhash_reader")
                     .format(ident))


def prepare(conn: psycopg.Connection[Any], schema: str) -> None:
    """Before alembic runs, in its transaction: the schema, our version row, the search_path."""
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    ours = _ours_in_public(conn)
    if ours and not _exists(conn, _version_table(schema)):
        _make_version_table(conn, schema, ours)
        conn.execute("DELETE FROM public.alembic_version WHERE version_num = ANY(%s)", [ours])
        if not conn.execute("SELECT 1 FROM public.alembic_version LIMIT 1").fetchone():
            conn.execute("DROP TABLE public.alembic_version")
    # (an old store's revisions find the version table, now in the schema, too)
    path = f"public, {schema}" if objects_in_public(conn, schema) else search_path(schema)
    # simhash.schema: where revision 0022 moves the objects to (and back from)
    conn.execute("SELECT set_config('search_path', %s, true),"
                 " set_config('simhash.schema', %s, true)", [path, schema])


def settle(conn: psycopg.Connection[Any], schema: str) -> None:
    """After alembic ran: a store downgraded below 0022 gets its revision back in public,
    and a store downgraded to nothing leaves no empty schema behind."""
    if not _exists(conn, _version_table(schema)):
        return
    ident = sql.Identifier(schema)
    rows = [r[0] for r in conn.execute(
        sql.SQL("SELECT version_num FROM {}.alembic_version").format(ident)).fetchall()]
    gone = not _exists(conn, f"{schema}.simhash_documents")
    if rows and objects_in_public(conn, schema):
        if _exists(conn, "public.alembic_version") and not all(
                OUR_REVISION.fullmatch(r[0]) for r in conn.execute(
                    "SELECT version_num FROM public.alembic_version").fetchall()):
            return  # public's table is an app's: our revision stays in our schema
        _make_version_table(conn, "public", rows)
    elif rows or not gone:
        return
    conn.execute(sql.SQL("DROP TABLE {}.alembic_version").format(ident))
    empty = conn.execute(
        "SELECT NOT EXISTS (SELECT 1 FROM pg_class WHERE relnamespace = %s::regnamespace)"
        " AND NOT EXISTS (SELECT 1 FROM pg_proc WHERE pronamespace = %s::regnamespace)",
        [schema, schema]).fetchone()
    if empty and empty[0]:
        conn.execute(sql.SQL("DROP SCHEMA {}").format(ident))
