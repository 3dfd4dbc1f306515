"""Initial schema: simhash_documents, simhash_meta and the SQL functions.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.resources import run_sql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    run_sql("0001_schema.sql")
    run_sql("0001_functions.sql")
    run_sql("0001_add.sql")


def downgrade() -> None:
    run_sql("0001_drop.sql")
