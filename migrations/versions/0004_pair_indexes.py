"""Pair block indexes (b_i, b_(i+1), fingerprint) for k <= 3 (issue 6).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from simhash_pg.resources import read_sql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _run(name: str) -> None:
    # as in 0001: the file goes to psycopg untouched (plpgsql bodies, '%')
    op.get_bind().connection.driver_connection.execute(read_sql(name))


def upgrade() -> None:
    _run("0004_pair_indexes.sql")


def downgrade() -> None:
    _run("0004_pair_indexes_drop.sql")
