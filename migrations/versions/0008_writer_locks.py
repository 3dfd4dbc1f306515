"""Writers take their locks in one order, with a time limit; links survive no DELETE (issue 18).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0008_writer_locks.sql")


def downgrade() -> None:
    run_sql("0005_add.sql")  # 0005's simhash_add, before its lock function goes
    run_sql("0008_writer_locks_drop.sql")
