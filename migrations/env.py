"""alembic environment for simhash-pg.

DSN, first found: ``-x dsn=...``, ``$SIMHASH_PG_DSN``, the config's
``sqlalchemy.url`` (``simhash_pg.db.migrate`` sets it). A plain ``postgresql://``
DSN is given the psycopg 3 driver.
"""

from __future__ import annotations

import os
from typing import Any

from alembic import context
from sqlalchemy import create_engine, pool

from simhash_pg.db import layout
from simhash_pg.db.migrate import sqlalchemy_url
from simhash_pg.db.schema import metadata

config = context.config
target_metadata = metadata

_MODEL_TABLES = set(metadata.tables)


def _dsn() -> str:
    dsn = context.get_x_argument(as_dictionary=True).get("dsn") or os.environ.get("SIMHASH_PG_DSN")
    dsn = dsn or config.get_main_option("sqlalchemy.url")
    if not dsn:
        raise SystemExit(
            "simhash-pg migrations: no database given; pass -x dsn=postgresql://... "
            "or set SIMHASH_PG_DSN"
        )
    return sqlalchemy_url(dsn)


def _schema() -> str:
    # the caller's (simhash_pg.db.migrate), else -x schema=..., else $SIMHASH_PG_SCHEMA
    given = config.attributes.get("simhash_schema")
    given = given or context.get_x_argument(as_dictionary=True).get("schema")
    return layout.schema_name(given)


def include_object(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    # Only our own tables: the database may hold an application's tables too.
    if type_ == "table":
        return name in _MODEL_TABLES
    return True


def run_migrations_offline() -> None:
    context.configure(
        url=_dsn(),
        target_metadata=target_metadata,
        literal_binds=True,
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = config.attributes.get("connection")
    if connectable is not None:
        _run(connectable)
        return
    engine = create_engine(_dsn(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def _run(connection: Any) -> None:
    schema = _schema()
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_object=include_object,
        compare_type=True,
        # one transaction for the whole upgrade: all or nothing
        transaction_per_migration=False,
        # our own version table, in our schema: never an app's alembic_version
        version_table_schema=schema,
    )
    with context.begin_transaction():
        driver = connection.connection.driver_connection
        layout.prepare(driver, schema)
        context.run_migrations()
        layout.settle(driver, schema)


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
