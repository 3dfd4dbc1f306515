"""The partition interval (day, week or month), recorded in simhash_meta (issue 17, item 3).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = None


def upgrade() -> None:
    run_sql("0013_partition_interval.sql")


def downgrade() -> None:
    run_sql("0013_partition_interval_drop.sql")
