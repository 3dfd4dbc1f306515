"""A big batch's look-up skips the partitions that hold no page.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: one search function's body only.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0025_batch_partitions.sql")


def downgrade() -> None:
    run_sql("0025_batch_partitions_drop.sql")
