"""simhash_documents partitioned by day on created_at; keys unique through simhash_keys.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_pg.db.resources import run_sql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What downgrade() destroys, for `simhash-pg db downgrade` to ask about
# (simhash_pg.db.migrate.downgrade_losses); None: nothing a re-upgrade does not rebuild.
downgrade_drops: str | None = (
    "the duplicate_of links that name rows a purge already removed (cleared: the "
    "restored foreign key refuses them); every row itself is kept"
)


def upgrade() -> None:
    run_sql("0005_partitions.sql")
    run_sql("0005_add.sql")  # simhash_add on the keys table


def downgrade() -> None:
    run_sql("0005_partitions_drop.sql")
    run_sql("0001_add.sql")  # 0001's simhash_add again
