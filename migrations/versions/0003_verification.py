"""Verification text and sentence signature columns (issue 7).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from simhash_pg.resources import read_sql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _run(name: str) -> None:
    # as in 0001: the file goes to psycopg untouched (DO blocks, '%')
    op.get_bind().connection.driver_connection.execute(read_sql(name))


def upgrade() -> None:
    _run("0003_verification.sql")


def downgrade() -> None:
    _run("0003_verification_drop.sql")
