"""Pair block indexes (b_i, b_(i+1), fingerprint) for k <= 3 (issue 6).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0004_pair_indexes.sql")
    run_sql("0004_functions.sql")


def downgrade() -> None:
    run_sql("0004_pair_indexes_drop.sql")
    run_sql("0001_functions.sql")  # 0001's near functions again
