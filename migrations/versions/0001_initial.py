"""Initial schema: simhash_documents, simhash_meta and the SQL functions.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from simhash_pg.resources import read_sql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _run(name: str) -> None:
    # Straight to psycopg, without parameters: the files hold several
    # statements and plpgsql '%' placeholders, which must reach the server
    # untouched. Same connection, so the same transaction.
    op.get_bind().connection.driver_connection.execute(read_sql(name))


def upgrade() -> None:
    _run("0001_schema.sql")
    _run("0001_functions.sql")


def downgrade() -> None:
    _run("0001_drop.sql")
